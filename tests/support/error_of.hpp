#pragma once
// The message of the mantissa::Error `f` throws, or "(no error)": tests compare it whole.
#include <functional>
#include <string>

#include "mantissa/error.hpp"

namespace mantissa::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace mantissa::testing
