#include "mantissa/kernels/pointwise.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "mantissa/kernels/parallel.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "pointwise_avx512.hpp"
#include "vector_exp.hpp"

namespace mantissa::kernels {
namespace {
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;
}  // namespace

// 0.5 (1 + tanh(u)) = sigmoid(2u): no cancellation for large negative x (exp(-2u) may reach
// infinity there, giving exactly 0). exp runs 8 lanes at a time on a block of e = exp(-2u),
// and blocks are spread over the threads.
namespace {
constexpr std::int64_t kTile = 512;

// e[i] = exp(-2u(x[i])) for one tile.
void gelu_exponentials(const float* x, float* e, std::int64_t len) {
  const auto a = static_cast<float>(kSqrt2OverPi), b = static_cast<float>(kCubic);
  for (std::int64_t i = 0; i < len; ++i) {
    const float v = x[i];
    e[i] = -2.0f * a * (v + b * v * v * v);
  }
  detail::exp_shifted(e, e, len, 0.0f);
}

bool avx512() {
  return numerics::active_simd_path() == numerics::SimdPath::avx512;
}

// Round to bfloat16 with AVX512-BF16's conversion instruction (the same bits; fewer of them).
bool unit() {
  return numerics::cpu_features().avx512_bf16;
}
}  // namespace

void gelu_forward(const float* x, float* y, std::int64_t n) {
  if (avx512()) {
    parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
      detail::gelu_forward_avx512(x + begin, y + begin, end - begin);
    });
    return;
  }
  parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
    float e[kTile];
    for (std::int64_t t0 = begin; t0 < end; t0 += kTile) {
      const std::int64_t len = std::min(kTile, end - t0);
      gelu_exponentials(x + t0, e, len);
      for (std::int64_t i = 0; i < len; ++i) y[t0 + i] = x[t0 + i] / (1.0f + e[i]);
    }
  });
}

void gelu_backward(const float* x, const float* dy, float* dx, std::int64_t n) {
  if (avx512()) {
    parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
      detail::gelu_backward_avx512(x + begin, dy + begin, dx + begin, end - begin);
    });
    return;
  }
  const auto a = static_cast<float>(kSqrt2OverPi), b = static_cast<float>(kCubic);
  parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
    float e[kTile];
    for (std::int64_t t0 = begin; t0 < end; t0 += kTile) {
      const std::int64_t len = std::min(kTile, end - t0);
      gelu_exponentials(x + t0, e, len);
      for (std::int64_t i = 0; i < len; ++i) {
        const float v = x[t0 + i];
        const float s = 1.0f / (1.0f + e[i]);
        const float du = a * (1.0f + 3.0f * b * std::min(v * v, detail::kGeluSquareCap));
        dx[t0 + i] = dy[t0 + i] * (s + v * s * (1.0f - s) * 2.0f * du);
      }
    }
  });
}

void gelu_forward_ref(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    y[i] = static_cast<float>(0.5 * v * (1.0 + std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v))));
  }
}

void gelu_backward_ref(const float* x, const float* dy, float* dx, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    const double t = std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v));
    const double dt = (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * kCubic * v * v);
    dx[i] = static_cast<float>(dy[i] * (0.5 * (1.0 + t) + 0.5 * v * dt));
  }
}

// The bfloat16 kernels. Off the avx512 path: a tile of float32 values per thread, decoded,
// computed by the float32 kernel and encoded (what the _ref twins do for the whole array).
namespace {
constexpr std::int64_t kBf16Tile = 2048;

void decode_bf16(const std::uint16_t* x, float* out, std::int64_t n) {
  numerics::decode_array(x, static_cast<std::size_t>(n), numerics::Format::bfloat16, out);
}
void encode_bf16(const float* x, std::uint16_t* out, std::int64_t n) {
  numerics::encode_array(x, static_cast<std::size_t>(n), numerics::Format::bfloat16, out);
}

// fn(begin, len, a, b, out): float32 tiles of the inputs (b null for one input), out to fill.
template <class Fn>
void by_float_tiles(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* y,
                    std::int64_t n, Fn&& fn) {
  parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
    float ta[kBf16Tile], tb[kBf16Tile], out[kBf16Tile];
    for (std::int64_t t0 = begin; t0 < end; t0 += kBf16Tile) {
      const std::int64_t len = std::min(kBf16Tile, end - t0);
      decode_bf16(a + t0, ta, len);
      if (b != nullptr) decode_bf16(b + t0, tb, len);
      fn(ta, tb, out, len);
      encode_bf16(out, y + t0, len);
    }
  });
}

// The _ref twins' way: the whole arrays decoded element by element, the float32 kernel,
// then encoded element by element.
template <class Fn>
void whole_arrays_ref(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* y,
                      std::int64_t n, Fn&& fn) {
  const auto count = static_cast<std::size_t>(n);
  std::vector<float> fa(count), fb(b != nullptr ? count : 0), out(count);
  numerics::decode_array_ref(a, count, numerics::Format::bfloat16, fa.data());
  if (b != nullptr) numerics::decode_array_ref(b, count, numerics::Format::bfloat16, fb.data());
  fn(fa.data(), fb.data(), out.data(), n);
  numerics::encode_array_ref(out.data(), count, numerics::Format::bfloat16, y);
}

void add_floats(const float* a, const float* b, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}
}  // namespace

void gelu_forward_bf16(const std::uint16_t* x, std::uint16_t* y, std::int64_t n) {
  if (avx512()) {
    parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
      detail::gelu_forward_bf16_avx512(x + begin, y + begin, end - begin, unit());
    });
    return;
  }
  by_float_tiles(x, nullptr, y, n, [](const float* a, const float*, float* out, std::int64_t len) {
    gelu_forward(a, out, len);
  });
}

void gelu_backward_bf16(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx,
                        std::int64_t n) {
  if (avx512()) {
    parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
      detail::gelu_backward_bf16_avx512(x + begin, dy + begin, dx + begin, end - begin, unit());
    });
    return;
  }
  by_float_tiles(x, dy, dx, n, [](const float* a, const float* b, float* out, std::int64_t len) {
    gelu_backward(a, b, out, len);
  });
}

void add_bf16(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* y, std::int64_t n) {
  if (avx512()) {
    parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
      detail::add_bf16_avx512(a + begin, b + begin, y + begin, end - begin, unit());
    });
    return;
  }
  by_float_tiles(a, b, y, n, add_floats);
}

namespace {
// n values of x from element `at` as float32 into out (decoded when bfloat16).
void widen(Bf16OrFloat32 x, std::int64_t at, std::int64_t n, float* out) {
  if (x.bf16) {
    decode_bf16(static_cast<const std::uint16_t*>(x.data) + at, out, n);
  } else {
    std::copy_n(static_cast<const float*>(x.data) + at, n, out);
  }
}
}  // namespace

void sum_to_float32(Bf16OrFloat32 a, Bf16OrFloat32 b, float* y, std::int64_t n) {
  if (avx512()) {
    using Kernel = void (*)(const void*, const void*, float*, std::int64_t);
    const Kernel kernel = a.bf16 ? (b.bf16 ? detail::sum_to_float32_avx512<true, true>
                                           : detail::sum_to_float32_avx512<true, false>)
                                 : (b.bf16 ? detail::sum_to_float32_avx512<false, true>
                                           : detail::sum_to_float32_avx512<false, false>);
    parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
      const auto at = [&](Bf16OrFloat32 x) -> const void* {
        return x.bf16 ? static_cast<const void*>(static_cast<const std::uint16_t*>(x.data) + begin)
                      : static_cast<const void*>(static_cast<const float*>(x.data) + begin);
      };
      kernel(at(a), at(b), y + begin, end - begin);
    });
    return;
  }
  parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
    float tb[kBf16Tile];
    for (std::int64_t t0 = begin; t0 < end; t0 += kBf16Tile) {
      const std::int64_t len = std::min(kBf16Tile, end - t0);
      widen(a, t0, len, y + t0);
      widen(b, t0, len, tb);
      for (std::int64_t i = 0; i < len; ++i) y[t0 + i] += tb[i];
    }
  });
}

void sum_to_float32_ref(Bf16OrFloat32 a, Bf16OrFloat32 b, float* y, std::int64_t n) {
  const auto count = static_cast<std::size_t>(n);
  std::vector<float> fa(count), fb(count);
  for (auto [x, out] : {std::pair{a, fa.data()}, std::pair{b, fb.data()}}) {
    if (x.bf16) {
      numerics::decode_array_ref(x.data, count, numerics::Format::bfloat16, out);
    } else {
      std::copy_n(static_cast<const float*>(x.data), count, out);
    }
  }
  add_floats(fa.data(), fb.data(), y, n);
}

void add_bf16_rows(const std::uint16_t* g, std::int64_t rows, std::int64_t ld, std::int64_t n,
                   float* sums) {
  if (avx512()) {
    detail::add_bf16_rows_avx512(g, rows, ld, n, sums);
    return;
  }
  float row[kBf16Tile];
  for (std::int64_t j0 = 0; j0 < n; j0 += kBf16Tile) {
    const std::int64_t len = std::min(kBf16Tile, n - j0);
    for (std::int64_t r = 0; r < rows; ++r) {
      decode_bf16(g + r * ld + j0, row, len);
      for (std::int64_t j = 0; j < len; ++j) sums[j0 + j] += row[j];
    }
  }
}

void add_bf16_rows_ref(const std::uint16_t* g, std::int64_t rows, std::int64_t ld, std::int64_t n,
                       float* sums) {
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t j = 0; j < n; ++j) {
      float v = 0.0f;
      numerics::decode_array_ref(g + r * ld + j, 1, numerics::Format::bfloat16, &v);
      sums[j] += v;
    }
  }
}

void gelu_forward_bf16_ref(const std::uint16_t* x, std::uint16_t* y, std::int64_t n) {
  whole_arrays_ref(x, nullptr, y, n,
                   [](const float* a, const float*, float* out, std::int64_t len) {
                     gelu_forward(a, out, len);
                   });
}

void gelu_backward_bf16_ref(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx,
                            std::int64_t n) {
  whole_arrays_ref(x, dy, dx, n, [](const float* a, const float* b, float* out, std::int64_t len) {
    gelu_backward(a, b, out, len);
  });
}

void add_bf16_ref(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* y,
                  std::int64_t n) {
  whole_arrays_ref(a, b, y, n, add_floats);
}

void exp_forward(const float* x, float* y, std::int64_t n) {
  detail::exp_shifted(x, y, n, 0.0f);
}

void exp_forward_ref(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = static_cast<float>(std::exp(static_cast<double>(x[i])));
}

void relu_forward(const float* x, float* y, std::int64_t n) {
  parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  });
}

void relu_backward(const float* x, const float* dy, float* dx, std::int64_t n) {
  parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
  });
}

}  // namespace mantissa::kernels
