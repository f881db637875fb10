#pragma once
// The formats of docs/design.md section 2, written down again for the tests (not read from the
// library's traits table), each paired with the library's Format.
#include <gtest/gtest.h>

#include <array>
#include <ostream>
#include <string>
#include <tuple>

#include "exact_reference.hpp"
#include "mantissa/numerics/format.hpp"
#include "mantissa/numerics/rounding.hpp"

namespace mantissa::testing {

struct FormatCase {
  numerics::Format format;
  RefFormat ref;
  int storage_bytes;
};

// The sign/exponent/mantissa formats (not E8M0, which test_block_formats.cpp covers).
inline const std::array<FormatCase, 8>& narrow_format_cases() {
  static const std::array<FormatCase, 8> cases = {{
      {numerics::Format::float16, {5, 10, 15, true}, 2},
      {numerics::Format::bfloat16, {8, 7, 127, true}, 2},
      {numerics::Format::cbfloat16, {6, 9, 31, true}, 2},
      {numerics::Format::float8_e4m3, {4, 3, 7, false}, 1},
      {numerics::Format::float8_e5m2, {5, 2, 15, true}, 1},
      // OCP MX v1.0: no infinity, no NaN.
      {numerics::Format::float6_e2m3, {2, 3, 1, false, false}, 1},
      {numerics::Format::float6_e3m2, {3, 2, 3, false, false}, 1},
      {numerics::Format::float4_e2m1, {2, 1, 1, false, false}, 1},
  }};
  return cases;
}

inline RefRounding to_ref(numerics::Rounding r) {
  switch (r) {
    case numerics::Rounding::nearest_even:
      return RefRounding::nearest_even;
    case numerics::Rounding::toward_zero:
      return RefRounding::toward_zero;
    case numerics::Rounding::stochastic:
      return RefRounding::stochastic;
  }
  return RefRounding::nearest_even;
}

inline std::string case_name(numerics::Format f) {
  return std::string(numerics::name(f));
}

// Every (format, rounding mode) pair, and the test-name suffix for one.
using FormatRounding = std::tuple<FormatCase, numerics::Rounding>;
inline auto all_formats_and_roundings() {
  return ::testing::Combine(
      ::testing::ValuesIn(narrow_format_cases()),
      ::testing::Values(numerics::Rounding::nearest_even, numerics::Rounding::toward_zero,
                        numerics::Rounding::stochastic));
}
inline std::string format_rounding_name(const ::testing::TestParamInfo<FormatRounding>& info) {
  return case_name(std::get<0>(info.param).format) + "_" +
         std::string(numerics::rounding_name(std::get<1>(info.param)));
}

// How GoogleTest shows a parameter in test names and failures.
inline void PrintTo(const FormatCase& c, std::ostream* os) {
  *os << numerics::name(c.format);
}

}  // namespace mantissa::testing

namespace mantissa::numerics {
inline void PrintTo(Rounding r, std::ostream* os) {
  *os << rounding_name(r);
}
}  // namespace mantissa::numerics
