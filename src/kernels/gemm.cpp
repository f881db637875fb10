#include "mantissa/kernels/gemm.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "bf16_dot_step.hpp"
#include "gemm/blocked_gemm.hpp"
#include "gemm/onednn_routes.hpp"
#include "gemm/packing.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/numerics/convert.hpp"

namespace mantissa::kernels {
namespace {

void check(const GemmShape& s) {
  if (s.m < 0 || s.n < 0 || s.k < 0) {
    throw Error("gemm: negative size (m " + std::to_string(s.m) + ", n " + std::to_string(s.n) +
                ", k " + std::to_string(s.k) + ")");
  }
}

// A stored matrix of `rows` lines of `length` elements, `ld` apart: each line must fit
// (nothing to hold when the matrix is empty).
void check_ld(const char* field, std::int64_t ld, std::int64_t rows, std::int64_t length) {
  if (rows > 0 && length > 0 && ld < length) {
    throw Error(std::string("gemm: ") + field + " " + std::to_string(ld) +
                " (expected >= " + std::to_string(length) + ", the length of a stored line)");
  }
}

void check_format(const char* what, numerics::Format f) {
  if (static_cast<std::size_t>(f) >= numerics::kFormatCount) {
    throw Error(std::string("gemm: ") + what + " format " + std::to_string(static_cast<int>(f)) +
                " is not a format");
  }
  if (!numerics::is_tensor_format(f)) {
    throw Error(std::string("gemm: ") + what + " format " + std::string(numerics::name(f)) +
                " is not a format tensors are stored in");
  }
}

// The shape, the operands' layouts and formats, and the precision's format, before any route
// reads them.
void check(const GemmShape& s, const Operand& a, const Operand& b, const GemmPrecision& p) {
  check(s);
  check_ld("lda", s.lda, s.trans_a ? s.k : s.m, s.trans_a ? s.m : s.k);
  check_ld("ldb", s.ldb, s.trans_b ? s.n : s.k, s.trans_b ? s.k : s.n);
  check_format("operand A's", a.format);
  check_format("operand B's", b.format);
  check_format("the precision's", p.format);
}

void check(const GemmShape& s, const Operand& a, const Operand& b, const GemmEpilogue& epilogue,
           const GemmPrecision& p) {
  check(s, a, b, p);
  if (!epilogue) throw Error("gemm: the epilogue is empty (no function to receive the tiles)");
}

void check(const GemmShape& s, const Operand& a, const Operand& b, const float* c,
           const GemmPrecision& p) {
  check(s, a, b, p);
  check_ld("ldc", s.ldc, s.m, s.n);
  if (c == nullptr && s.m > 0 && s.n > 0) throw Error("gemm: C is null");
}

void run_on(MatmulRoute route, const GemmShape& s, const Operand& a, const Operand& b,
            const GemmEpilogue& epilogue, const GemmPrecision& p, bool all_threads) {
  const gemm_detail::PassList passes = gemm_detail::passes_for(p, on_bf16_units(route));
  switch (route) {
    case MatmulRoute::onednn_bf16:
      gemm_detail::onednn_bf16_gemm(s, a, b, passes, epilogue, all_threads);
      return;
    case MatmulRoute::onednn_fp32:
      gemm_detail::onednn_f32_gemm(s, a, b, passes, epilogue, all_threads);
      return;
    case MatmulRoute::bf16:
      gemm_detail::blocked_gemm(s, a, b, passes, epilogue, all_threads,
                                gemm_detail::DotUnit::bf16_pairs);
      return;
    case MatmulRoute::amx:
      gemm_detail::blocked_gemm(s, a, b, passes, epilogue, all_threads,
                                gemm_detail::DotUnit::amx_tiles);
      return;
    case MatmulRoute::fp32:
    case MatmulRoute::automatic:
      break;
  }
  gemm_detail::blocked_gemm(s, a, b, passes, epilogue, all_threads);
}

// Keeps the route probe's reads from being optimized away.
void probe_sink(std::uint32_t x) {
  thread_local volatile std::uint32_t sink = 0;
  sink = sink ^ x;
}

void run(const GemmShape& s, const Operand& a, const Operand& b, const GemmEpilogue& epilogue,
         const GemmPrecision& p, bool all_threads) {
  check(s);
  if (s.m == 0 || s.n == 0 || s.k == 0) {  // nothing to multiply: no route to measure
    run_on(MatmulRoute::fp32, s, a, b, epilogue, p, all_threads);
    return;
  }
  const bool threads = all_threads && !omp_in_parallel();
  const GemmKey key{s.m, s.n, s.k, s.trans_a, s.trans_b, p.format, p.passes, threads};
  // The probe reads every finished value once, as every real epilogue does: a route that
  // hands blocks over while they are in cache is timed with that advantage, one that writes
  // the whole product first with the cost of reading it back.
  const GemmEpilogue read_back = [](const GemmTile& t) {
    std::uint32_t bits = 0;  // an integer reduction: vector loads at the memory's pace
    for (std::int64_t r = 0; r < t.rows; ++r) {
      const float* v = t.values + r * t.ld;
      for (std::int64_t j = 0; j < t.cols; ++j) {
        std::uint32_t u;
        std::memcpy(&u, v + j, sizeof(u));
        bits ^= u;
      }
    }
    probe_sink(bits);
  };
  bool probed = false;
  const MatmulRoute route = choose_route(key, p.route, [&](MatmulRoute r) {
    probed = true;
    run_on(r, s, a, b, read_back, p, all_threads);
  });
  if (probed) {
    // The probe ran every route once, and a route's copies of operands it cannot read in
    // place can be as large as an operand: they go back, so that a shape's first use leaves
    // held only what the route it takes allocates again below.
    gemm_detail::release_onednn_copies();
    gemm_detail::release_operand_copies();
  }
  run_on(route, s, a, b, epilogue, p, all_threads);
}

// Writes (or adds) finished blocks into a float32 matrix.
GemmEpilogue into_matrix(float* c, std::int64_t ldc, bool accumulate) {
  return [=](const GemmTile& t) {
    for (std::int64_t r = 0; r < t.rows; ++r) {
      const float* v = t.values + r * t.ld;
      float* out = c + (t.row0 + r) * ldc + t.col0;
      if (accumulate) {
        for (std::int64_t j = 0; j < t.cols; ++j) out[j] += v[j];
      } else {
        for (std::int64_t j = 0; j < t.cols; ++j) out[j] = v[j];
      }
    }
  };
}

float element(const Operand& x, bool trans, std::int64_t ld, std::int64_t r, std::int64_t c) {
  const std::int64_t index = trans ? c * ld + r : r * ld + c;
  const int bytes = numerics::traits(x.format).storage_bytes;
  float v = 0;
  numerics::decode_array_ref(static_cast<const char*>(x.data) + index * bytes, 1, x.format, &v);
  return v;
}

using detail::dot_step;

}  // namespace

GemmShape GemmShape::dense(std::int64_t m, std::int64_t n, std::int64_t k, bool trans_a,
                           bool trans_b) {
  return GemmShape{m, n, k, trans_a, trans_b, trans_a ? m : k, trans_b ? k : n, n};
}

void gemm(const GemmShape& s, Operand a, Operand b, float* c, bool accumulate,
          const GemmPrecision& p) {
  check(s, a, b, c, p);
  run(s, a, b, into_matrix(c, s.ldc, accumulate), p, true);
}

void gemm(const GemmShape& s, Operand a, Operand b, const GemmEpilogue& epilogue,
          const GemmPrecision& p) {
  check(s, a, b, epilogue, p);
  run(s, a, b, epilogue, p, true);
}

void gemm_in_thread(const GemmShape& s, Operand a, Operand b, float* c, bool accumulate,
                    const GemmPrecision& p) {
  check(s, a, b, c, p);
  run(s, a, b, into_matrix(c, s.ldc, accumulate), p, false);
}

void gemm_in_thread(const GemmShape& s, Operand a, Operand b, const GemmEpilogue& epilogue,
                    const GemmPrecision& p) {
  check(s, a, b, epilogue, p);
  run(s, a, b, epilogue, p, false);
}

bool gemm_copies_to_float32(const GemmShape& s, const GemmPrecision& p) {
  const GemmKey key{s.m, s.n, s.k, s.trans_a, s.trans_b, p.format, p.passes, !omp_in_parallel()};
  const std::optional<MatmulRoute> route = known_route(key, p.route);
  return route == MatmulRoute::onednn_fp32 && gemm_detail::passes_for(p, false).count == 1;
}

bool gemm_copies_to_bf16(const GemmShape& s, const GemmPrecision& p) {
  const GemmKey key{s.m, s.n, s.k, s.trans_a, s.trans_b, p.format, p.passes, !omp_in_parallel()};
  const std::optional<MatmulRoute> route = known_route(key, p.route);
  return route == MatmulRoute::onednn_bf16 && gemm_detail::passes_for(p, true).count == 1;
}

RouteRecord sample_route(Format format, int passes, std::int64_t n) {
  const int bytes = numerics::traits(format).storage_bytes;
  std::vector<float> values(static_cast<std::size_t>(n * n));
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = 1.0f / static_cast<float>(1 + i % 7) - 0.25f;
  }
  std::vector<unsigned char> stored(values.size() * static_cast<std::size_t>(bytes));
  numerics::encode_array(values.data(), values.size(), format, stored.data());
  std::vector<float> c(values.size());
  const GemmPrecision p{format, passes, GemmAlgorithm::automatic, MatmulRoute::automatic};
  const Operand x(stored.data(), format);
  gemm(GemmShape::dense(n, n, n), x, x, c.data(), false, p);
  const GemmKey key{n, n, n, false, false, format, passes, !omp_in_parallel()};
  for (const RouteRecord& r : route_records()) {
    if (r.key == key) return r;
  }
  throw Error("sample_route: no route recorded for " + describe(key));
}

namespace {
// The pair routes' twins share this walk: for each C[i][j] and each pass, `sum(acc, x, y)` adds
// the pass's products the way the route's instruction does, x(k) and y(k) being A's row and B's
// column (zero past s.k, as the packed panels' padding).
template <class Sum>
void pair_route_ref(const char* name, const char* route, const GemmShape& s, Operand a, Operand b,
                    float* c, bool accumulate, const GemmPrecision& p, Sum sum) {
  check(s);
  if (p.format == Format::float32) {
    throw Error(std::string(name) + ": float32 values are not bf16 values (the " + route +
                " route needs a half or fp8 format)");
  }
  const gemm_detail::PassList passes = gemm_detail::passes_for(p, true);
  for (std::int64_t i = 0; i < s.m; ++i) {
    for (std::int64_t j = 0; j < s.n; ++j) {
      float acc = 0.0f;
      for (int q = 0; q < passes.count; ++q) {
        const gemm_detail::Pass& pass = passes.pass[q];
        const auto x = [&](std::int64_t k) {
          return k < s.k ? gemm_detail::part_value(element(a, s.trans_a, s.lda, i, k), pass.a)
                         : 0.0f;
        };
        const auto y = [&](std::int64_t k) {
          return k < s.k ? gemm_detail::part_value(element(b, s.trans_b, s.ldb, k, j), pass.b)
                         : 0.0f;
        };
        acc = sum(acc, x, y);
      }
      float& out = c[i * s.ldc + j];
      out = accumulate ? out + acc : acc;
    }
  }
}
}  // namespace

void gemm_bf16_ref(const GemmShape& s, Operand a, Operand b, float* c, bool accumulate,
                   const GemmPrecision& p) {
  pair_route_ref("gemm_bf16_ref", "bf16", s, a, b, c, accumulate, p,
                 [&](float acc, const auto& x, const auto& y) {
                   for (std::int64_t k = 0; k < s.k; k += 2) {
                     acc = dot_step(acc, x(k + 1), y(k + 1));
                     acc = dot_step(acc, x(k), y(k));
                   }
                   return acc;
                 });
}

void gemm_amx_ref(const GemmShape& s, Operand a, Operand b, float* c, bool accumulate,
                  const GemmPrecision& p) {
  constexpr std::int64_t kChunk = 2 * detail::kAmxChunkPairs;
  pair_route_ref("gemm_amx_ref", "amx", s, a, b, c, accumulate, p,
                 [&](float acc, const auto& x, const auto& y) {
                   for (std::int64_t k0 = 0; k0 < s.k; k0 += kChunk) {
                     const std::int64_t pairs = (std::min(kChunk, s.k - k0) + 1) / 2;
                     acc = detail::amx_chunk(
                         acc, pairs,
                         [&](std::int64_t pp, float& a0, float& b0, float& a1, float& b1) {
                           const std::int64_t k = k0 + 2 * pp;
                           a0 = x(k);
                           b0 = y(k);
                           a1 = x(k + 1);
                           b1 = y(k + 1);
                         });
                   }
                   return acc;
                 });
}

void gemm_ref(const GemmShape& s, Operand a, Operand b, float* c, bool accumulate,
              const GemmPrecision& p) {
  check(s);
  const gemm_detail::PassList passes = gemm_detail::passes_for(p, false);
  for (std::int64_t i = 0; i < s.m; ++i) {
    for (std::int64_t j = 0; j < s.n; ++j) {
      float acc = 0.0f;
      for (int q = 0; q < passes.count; ++q) {
        const gemm_detail::Pass& pass = passes.pass[q];
        for (std::int64_t k = 0; k < s.k; ++k) {
          const float x = gemm_detail::part_value(element(a, s.trans_a, s.lda, i, k), pass.a);
          const float y = gemm_detail::part_value(element(b, s.trans_b, s.ldb, k, j), pass.b);
          acc = std::fma(x, y, acc);
        }
      }
      float& out = c[i * s.ldc + j];
      out = accumulate ? out + acc : acc;
    }
  }
}

}  // namespace mantissa::kernels
