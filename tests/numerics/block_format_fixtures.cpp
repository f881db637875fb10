#include "block_format_fixtures.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace mantissa::testing {

RunFixture::RunFixture(numerics::Format format) {
  const std::string path = std::string(MANTISSA_NUMERICS_FIXTURES) + "/" +
                           std::string(numerics::name(format)) + "_rne_runs.txt";
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string start, code;
    if (!(fields >> start >> code)) throw std::runtime_error(path + ":" + std::to_string(number));
    const std::uint32_t s = static_cast<std::uint32_t>(std::stoul(start, nullptr, 16));
    if (starts_.empty() ? s != 0 : s <= starts_.back()) {
      throw std::runtime_error(path + ":" + std::to_string(number) + ": runs out of order");
    }
    starts_.push_back(s);
    codes_.push_back(code == "skip" ? -1 : static_cast<int>(std::stoul(code, nullptr, 16)));
  }
  if (starts_.empty()) throw std::runtime_error(path + ": no runs");
}

int RunFixture::code(std::uint32_t bits) const {
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), bits);
  return codes_[static_cast<std::size_t>(it - starts_.begin() - 1)];
}

std::vector<std::uint32_t> RunFixture::boundaries() const {
  return starts_;
}

std::uint32_t ref_encode_e8m0(float x, bool toward_zero, bool stochastic, bool saturate,
                              std::uint32_t random) {
  if (std::isnan(x) || x <= 0.0f) return 0xffu;
  if (std::isinf(x)) return saturate ? 0xfeu : 0xffu;
  const double v = x;
  if (v < std::ldexp(1.0, -127)) return 0x00u;
  int e = 0;
  std::frexp(v, &e);  // v = f * 2^e, 0.5 <= f < 1: lo = 2^(e - 1)
  const double lo = std::ldexp(1.0, e - 1);
  const double p = (v - lo) / lo;  // exact: a power-of-two divisor
  bool up = false;
  if (stochastic) {
    up = std::floor(std::ldexp(p, 32)) + static_cast<double>(random) >= std::ldexp(1.0, 32);
  } else if (!toward_zero) {
    up = p >= 0.5;
  }
  const int field = (e - 1) + 127 + (up ? 1 : 0);
  if (field > 254) return saturate ? 0xfeu : 0xffu;
  return static_cast<std::uint32_t>(field);
}

}  // namespace mantissa::testing
