// Products of two block-scaled operands (block_operand.hpp): the values route (decode to
// bfloat16, one GEMM, tensor scales in the epilogue) and the chunk route (fp8 elements per
// chunk of the reduction dimension, each chunk's product scaled in float32).
#include <algorithm>
#include <bit>
#include <cmath>

#include "mantissa/error.hpp"
#include "mantissa/kernels/parallel.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"
#include "mantissa/quant/block_operand.hpp"
#include "mantissa/tensor/tensor.hpp"

namespace mantissa::quant {

using namespace mantissa::kernels;  // the layer below: GEMM, threads, scratch
namespace {

using tensor::Shape;
using tensor::Tensor;

// How an operand of the product is read: op(X) has an outer dimension (A's rows, B's
// columns) and the reduction dimension k, which runs along X's rows (A transposed, B not) or
// along its columns.
struct Side {
  const PackedBlocks& q;
  bool k_along_rows;
  // The extent of one tile along the reduction dimension.
  std::int64_t k_extent() const { return k_along_rows ? q.tile.rows : q.tile.cols; }
  // The scale of the element at outer index i and reduction index k.
  float scale(std::int64_t i, std::int64_t k) const {
    return k_along_rows ? q.scale_at(k, i) : q.scale_at(i, k);
  }
  // The elements from reduction index k0 on as a GEMM operand (fp8 codes, one byte each).
  Operand elements_from(std::int64_t k0) const {
    const std::int64_t offset = k_along_rows ? k0 * q.cols : k0;
    return {q.elements.data() + offset, q.element};
  }
};

void check_shape(const GemmShape& s, const BlockOperand& a, const BlockOperand& b) {
  const std::int64_t am = s.trans_a ? a.cols : a.rows, ak = s.trans_a ? a.rows : a.cols;
  const std::int64_t bk = s.trans_b ? b.cols : b.rows, bn = s.trans_b ? b.rows : b.cols;
  if (am != s.m || ak != s.k || bk != s.k || bn != s.n || s.lda != a.cols || s.ldb != b.cols) {
    throw Error("block_scaled_gemm: operands " + std::to_string(a.rows) + "x" +
                std::to_string(a.cols) + " and " + std::to_string(b.rows) + "x" +
                std::to_string(b.cols) + " do not match the product " + std::to_string(s.m) + "x" +
                std::to_string(s.n) + "x" + std::to_string(s.k));
  }
}

// An operand as bfloat16 values (decoded into `storage` when packed); false when a packed
// operand's values are not bfloat16 values.
bool bf16_values(const BlockOperand& x, Tensor& storage, const std::uint16_t*& values) {
  if (x.values != nullptr) {
    values = x.values;
    return true;
  }
  storage = Tensor::empty(Shape{x.rows, x.cols}, Format::bfloat16);
  values = static_cast<const std::uint16_t*>(storage.raw_data());
  return dequantize_to_bf16(*x.packed, static_cast<std::uint16_t*>(storage.raw_data()));
}

// An operand as float32 values (exact: bfloat16 values widen, packed ones decode exactly).
Tensor float32_values(const BlockOperand& x) {
  Tensor t = Tensor::empty(Shape{x.rows, x.cols});
  if (x.values != nullptr) {
    for (std::int64_t i = 0; i < x.rows * x.cols; ++i) {
      t.f32()[i] = std::bit_cast<float>(static_cast<std::uint32_t>(x.values[i]) << 16);
    }
  } else {
    dequantize_to_float32(*x.packed, t.f32());
  }
  return t;
}

// The chunk length along k over which both operands' scales are constant.
std::int64_t chunk_length(const GemmShape& s, const Side& a, const Side& b) {
  const auto fp8 = [](Format f) { return f == Format::float8_e4m3 || f == Format::float8_e5m2; };
  if (!fp8(a.q.element) || !fp8(b.q.element)) {
    throw Error("block_scaled_gemm: scales that are not powers of two need fp8 elements (got " +
                std::string(numerics::name(a.q.element)) + " and " +
                std::string(numerics::name(b.q.element)) + ")");
  }
  const std::int64_t ea = std::min(a.k_extent(), s.k), eb = std::min(b.k_extent(), s.k);
  const std::int64_t chunk = std::min(ea, eb);
  if (chunk < 1 || (ea % chunk != 0 && ea != s.k) || (eb % chunk != 0 && eb != s.k)) {
    throw Error("block_scaled_gemm: tiles of " + std::to_string(ea) + " and " + std::to_string(eb) +
                " along the reduction dimension do not share chunks");
  }
  return chunk;
}

// C = sum over chunks of (A_chunk B_chunk) * (sa * sb), into c [m, n] (zeroed by the caller).
void chunk_products(const GemmShape& s, const Side& a, const Side& b, float* c, MatmulRoute route) {
  const std::int64_t chunk = chunk_length(s, a, b);
  std::vector<float> sa(static_cast<std::size_t>(s.m)), sb(static_cast<std::size_t>(s.n));
  const GemmPrecision gp{Format::float8_e4m3, 1, GemmAlgorithm::automatic, route};
  for (std::int64_t k0 = 0; k0 < s.k; k0 += chunk) {
    const std::int64_t len = std::min(chunk, s.k - k0);
    for (std::int64_t i = 0; i < s.m; ++i) sa[static_cast<std::size_t>(i)] = a.scale(i, k0);
    for (std::int64_t j = 0; j < s.n; ++j) sb[static_cast<std::size_t>(j)] = b.scale(j, k0);
    GemmShape cs = s;
    cs.k = len;
    gemm(
        cs, a.elements_from(k0), b.elements_from(k0),
        [&](const GemmTile& t) {
          for (std::int64_t r = 0; r < t.rows; ++r) {
            const float f = sa[static_cast<std::size_t>(t.row0 + r)];
            const float* v = t.values + r * t.ld;
            float* out = c + (t.row0 + r) * s.n + t.col0;
            for (std::int64_t j = 0; j < t.cols; ++j) {
              out[j] = out[j] + v[j] * (f * sb[static_cast<std::size_t>(t.col0 + j)]);
            }
          }
        },
        gp);
  }
}

// Hands c [m, n] to the epilogue in bands of rows, on all threads.
void hand_over(float* c, std::int64_t m, std::int64_t n, const GemmEpilogue& epilogue) {
  constexpr std::int64_t kBand = 64;
  parallel_chunks((m + kBand - 1) / kBand,
                  [&](std::int64_t b0, std::int64_t b1) {
                    for (std::int64_t b = b0; b < b1; ++b) {
                      const std::int64_t r0 = b * kBand, rows = std::min(kBand, m - r0);
                      epilogue(GemmTile{c + r0 * n, n, r0, rows, 0, n});
                    }
                  },
                  1, 1);
}

}  // namespace

void block_scaled_gemm(const GemmShape& s, BlockOperand a, BlockOperand b,
                       const GemmEpilogue& epilogue, MatmulRoute route) {
  check_shape(s, a, b);
  const auto values_route = [](const BlockOperand& x) {
    return x.values != nullptr || x.packed->bf16_scales();
  };
  if (values_route(a) && values_route(b)) {
    const float factor = (a.packed != nullptr ? a.packed->tensor_scale : 1.0f) *
                         (b.packed != nullptr ? b.packed->tensor_scale : 1.0f);
    const GemmEpilogue scaled = factor == 1.0f ? epilogue : [&](const GemmTile& t) {
      for (std::int64_t r = 0; r < t.rows; ++r) {
        float* v = t.values + r * t.ld;
        for (std::int64_t j = 0; j < t.cols; ++j) v[j] *= factor;
      }
      epilogue(t);
    };
    Tensor as, bs;
    const std::uint16_t *av = nullptr, *bv = nullptr;
    if (bf16_values(a, as, av) && bf16_values(b, bs, bv)) {
      gemm(s, Operand(av, Format::bfloat16), Operand(bv, Format::bfloat16), scaled,
           {Format::bfloat16, 1, GemmAlgorithm::automatic, route});
      return;
    }
    // A value below float32's normal range: float32 operands on the fp32 FMA route.
    const Tensor af = float32_values(a), bf = float32_values(b);
    gemm(s, af.f32(), bf.f32(), scaled,
         {Format::float32, 1, GemmAlgorithm::automatic, MatmulRoute::fp32});
    return;
  }
  if (a.packed == nullptr || b.packed == nullptr) {
    throw Error(
        "block_scaled_gemm: an operand given as values needs the other's scales to be "
        "powers of two or e4m3");
  }
  const Side sa{*a.packed, s.trans_a}, sb{*b.packed, !s.trans_b};
  if (chunk_length(s, sa, sb) >= s.k) {  // one chunk: scale the product on its way out
    const float* col_scale = nullptr;
    std::vector<float> vb(static_cast<std::size_t>(s.n));
    for (std::int64_t j = 0; j < s.n; ++j) vb[static_cast<std::size_t>(j)] = sb.scale(j, 0);
    col_scale = vb.data();
    const auto elements = [](const BlockOperand& x, const Side& side) {
      return x.element_values != nullptr ? Operand(x.element_values, Format::bfloat16)
                                         : side.elements_from(0);
    };
    gemm(s, elements(a, sa), elements(b, sb),
         [&](const GemmTile& t) {
           for (std::int64_t r = 0; r < t.rows; ++r) {
             const float f = sa.scale(t.row0 + r, 0);
             float* v = t.values + r * t.ld;
             for (std::int64_t j = 0; j < t.cols; ++j) {
               v[j] = 0.0f + v[j] * (f * col_scale[t.col0 + j]);
             }
           }
           epilogue(t);
         },
         {Format::float8_e4m3, 1, GemmAlgorithm::automatic, route});
    return;
  }
  Tensor c = Tensor::zeros(Shape{s.m, s.n});
  chunk_products(s, sa, sb, c.f32(), route);
  hand_over(c.f32(), s.m, s.n, epilogue);
}

bool copies_elements_to_bf16(const GemmShape& s, BlockOperand a, BlockOperand b,
                             MatmulRoute route) {
  if (a.packed == nullptr || b.packed == nullptr) return false;
  const auto fp8 = [](Format f) { return f == Format::float8_e4m3 || f == Format::float8_e5m2; };
  if (!fp8(a.packed->element) || !fp8(b.packed->element)) return false;
  if (a.packed->bf16_scales() && b.packed->bf16_scales()) return false;  // the values route
  const Side sa{*a.packed, s.trans_a}, sb{*b.packed, !s.trans_b};
  return chunk_length(s, sa, sb) >= s.k &&
         gemm_copies_to_bf16(s, {Format::float8_e4m3, 1, GemmAlgorithm::automatic, route});
}

void block_scaled_gemm_chunks_ref(const GemmShape& s, const PackedBlocks& a, const PackedBlocks& b,
                                  float* c) {
  check_shape(s, BlockOperand(a), BlockOperand(b));
  const Side sa{a, s.trans_a}, sb{b, !s.trans_b};
  const std::int64_t chunk = chunk_length(s, sa, sb);
  const numerics::Layout& la = numerics::layout(a.element);
  const numerics::Layout& lb = numerics::layout(b.element);
  const auto value = [](const PackedBlocks& q, const numerics::Layout& l, std::int64_t r,
                        std::int64_t col) {
    return numerics::decode(q.elements[static_cast<std::size_t>(r * q.cols + col)], l);
  };
  for (std::int64_t i = 0; i < s.m; ++i) {
    for (std::int64_t j = 0; j < s.n; ++j) {
      float acc = 0.0f;
      for (std::int64_t k0 = 0; k0 < s.k; k0 += chunk) {
        float sum = 0.0f;
        for (std::int64_t k = k0; k < std::min(s.k, k0 + chunk); ++k) {
          const float x = s.trans_a ? value(a, la, k, i) : value(a, la, i, k);
          const float y = s.trans_b ? value(b, lb, j, k) : value(b, lb, k, j);
          sum = std::fma(x, y, sum);
        }
        acc = acc + sum * (sa.scale(i, k0) * sb.scale(j, k0));
      }
      c[i * s.ldc + j] = acc;
    }
  }
}

}  // namespace mantissa::quant
