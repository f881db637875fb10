#include "mantissa/kernels/amx_pairs.hpp"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "amx_tiles.hpp"
#include "bf16_dot_step.hpp"
#include "mantissa/error.hpp"
#include "mantissa/numerics/cpu_features.hpp"

namespace mantissa::kernels {
namespace {

constexpr int kXfeatureTileData = 18;      // XTILEDATA, the tiles' 8 KiB of state
constexpr int kArchReqXcompPerm = 0x1023;  // arch_prctl: ask to use an XSAVE feature

// MANTISSA_AMX's value, unless it is one of the settings (off; on, empty or unset: the CPU's).
std::string setting_error() {
  const char* env = std::getenv("MANTISSA_AMX");
  if (env == nullptr) return "";
  const std::string v(env);
  if (v.empty() || v == "on" || v == "off") return "";
  return "MANTISSA_AMX='" + v +
         "' is not a setting (expected off, or on or unset for the CPU's tiles)";
}

std::string probe() {
  if (std::string bad = setting_error(); !bad.empty()) return bad + ": the tiles are not used";
  if (const char* env = std::getenv("MANTISSA_AMX"); env != nullptr && std::string(env) == "off") {
    return "turned off by MANTISSA_AMX=off";
  }
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0 || ((d >> 22) & 1u) == 0 ||
      ((d >> 24) & 1u) == 0) {
    return "this CPU has no AMX-BF16 tiles (it has: " +
           numerics::describe(numerics::cpu_features()) + ")";
  }
  unsigned xlo = 0, xhi = 0;
  __asm__("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
  if (((xlo >> 17) & 3u) != 3u) {
    return "the operating system does not enable the AMX tile state (XCR0 bits 17 and 18)";
  }
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureTileData) != 0) {
    return std::string("the operating system refused this process the AMX tiles (arch_prctl: ") +
           std::strerror(errno) + ")";
  }
  return "";
}

float bf16_value(std::uint32_t half) {
  const std::uint32_t bits = half << 16;
  float v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

}  // namespace

const std::string& amx_unavailable() {
  static const std::string why = probe();
  return why;
}

bool amx_available() {
  return amx_unavailable().empty();
}

std::string amx_setting_error() {
  return setting_error();
}

float amx_chunk_ref(float c, const std::uint32_t* a, std::int64_t a_stride, const std::uint32_t* b,
                    std::int64_t b_stride, std::int64_t pairs) {
  return detail::amx_chunk(c, pairs,
                           [&](std::int64_t p, float& a0, float& b0, float& a1, float& b1) {
                             const std::uint32_t x = a[p * a_stride], y = b[p * b_stride];
                             a0 = bf16_value(x & 0xFFFFu);
                             b0 = bf16_value(y & 0xFFFFu);
                             a1 = bf16_value(x >> 16);
                             b1 = bf16_value(y >> 16);
                           });
}

void amx_pair_product(std::int64_t m, std::int64_t n, std::int64_t pairs, PairRows a, PairCols b,
                      float* c, std::int64_t ldc, bool accumulate) {
  if (!amx_available()) throw Error("amx_pair_product: " + amx_unavailable());
  if (a.pair_stride != 1) {
    throw Error(
        "amx_pair_product: the left operand's pairs must be consecutive in its rows (pair "
        "stride " +
        std::to_string(a.pair_stride) + ")");
  }
  if (m <= 0 || n <= 0) return;
  detail::amx_pair_product_tiles(m, n, pairs, a, b, c, ldc, accumulate);
}

void amx_pair_product_ref(std::int64_t m, std::int64_t n, std::int64_t pairs, PairRows a,
                          PairCols b, float* c, std::int64_t ldc, bool accumulate) {
  constexpr std::int64_t kChunk = detail::kAmxChunkPairs;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = accumulate ? c[i * ldc + j] : 0.0f;
      for (std::int64_t p0 = 0; p0 < pairs; p0 += kChunk) {
        acc = amx_chunk_ref(acc, a.data + i * a.row_stride + p0 * a.pair_stride, a.pair_stride,
                            b.data + p0 * b.ld + j, b.ld, std::min(kChunk, pairs - p0));
      }
      c[i * ldc + j] = acc;
    }
  }
}

}  // namespace mantissa::kernels
