#pragma once
// The one error type the library throws on user error (bad input, bad configuration, a
// missing file). Its message names the argument, key or file and says what was expected.
#include <stdexcept>
#include <string>

namespace mantissa {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace mantissa
