#include "linear_quant_points.hpp"

#include <algorithm>
#include <bit>
#include <optional>
#include <vector>

#include "mantissa/numerics/block_scaling.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/fp4_packing.hpp"
#include "rounding_probe.hpp"

namespace mantissa::autograd::detail {
namespace {

using precision::Fp8Slot;
using precision::LayerRecipe;
using precision::Recipe;

constexpr std::int64_t kHadamardGroup = 16;

numerics::TileShape along_tile(Along along, std::int64_t block) {
  return along == Along::last ? numerics::TileShape{1, block} : numerics::TileShape{block, 1};
}

// t (float32, bfloat16 or another format, widened first) as float32 [cols, rows_padded],
// zero rows appended (the rows dimension becomes the last), each new row's groups of 16
// rotated by NVFP4's Hadamard transform; on all threads.
Tensor rotated_transpose(const Tensor& t, std::int64_t rows, std::int64_t cols,
                         std::int64_t rows_padded) {
  const Tensor src_t = t.format() == Format::bfloat16 ? t : to_format(t, Format::float32, false);
  const bool bf16 = src_t.format() == Format::bfloat16;
  const float* src32 = bf16 ? nullptr : src_t.f32();
  const auto* src16 = bf16 ? static_cast<const std::uint16_t*>(src_t.raw_data()) : nullptr;
  Tensor out = Tensor::zeros(Shape{cols, rows_padded});
  float* dst = out.f32();
  kernels::parallel_pieces(
      cols,
      [&](std::int64_t c0, std::int64_t c1) {
        constexpr std::int64_t kBlock = 32;
        for (std::int64_t r0 = 0; r0 < rows; r0 += kBlock) {
          const std::int64_t r1 = std::min(rows, r0 + kBlock);
          for (std::int64_t c = c0; c < c1; ++c) {
            for (std::int64_t r = r0; r < r1; ++r) {
              dst[c * rows_padded + r] =
                  bf16 ? std::bit_cast<float>(static_cast<std::uint32_t>(src16[r * cols + c]) << 16)
                       : src32[r * cols + c];
            }
          }
        }
        numerics::hadamard16_rows(dst + c0 * rows_padded, c1 - c0, rows_padded);
      },
      std::max<std::int64_t>(16, kernels::kParallelMinElements / std::max<std::int64_t>(rows, 1)),
      1);
  return out;
}

constexpr const char* kOp = "linear_quantized";

// On a sampled step: what a copy of t lost (precision::probe_elements), under the layer in
// force (a backward's: its node's). A copy made as bfloat16 values is quantized again into
// blocks for its element codes and scales (the same bits: nearest-even, power-of-two scales).
// A rotated copy (NVFP4's weight-gradient operands) is in the rotated basis and not measured.
void probe_copy(const Tensor& t, std::int64_t rows, std::int64_t cols, Fp8Slot role,
                const QuantCopy& copy, const quant::BlockSpec& spec) {
  if (precision::active_probe() == nullptr || copy.transposed) return;
  const Tensor t32 = to_format(t, Format::float32, false);
  std::optional<quant::PackedBlocks> again;
  const quant::PackedBlocks* blocks = copy.q.get();
  if (blocks == nullptr) {
    again = quant::quantize_packed(t32.raw_data(), Format::float32, rows, cols, spec);
    blocks = &*again;
  }
  const auto n = static_cast<std::size_t>(rows * cols);
  std::vector<float> q(n);
  if (blocks->element == Format::float4_e2m1) {
    numerics::decode_fp4_packed(blocks->elements.data(), n, q.data());
  } else {
    numerics::decode_array(blocks->elements.data(), n, blocks->element, q.data());
  }
  precision::probe_elements(
      role_of(role), kOp, blocks->element, t32.f32(), q.data(), rows, cols,
      [&](std::int64_t r, std::int64_t c) { return blocks->scale_at(r, c); }, blocks->tensor_scale);
}

}  // namespace

bool one_copy(const LayerRecipe& r, Fp8Slot role) {
  return r.recipe == Recipe::current ||
         (role == Fp8Slot::weight && (r.recipe == Recipe::blockwise || r.recipe == Recipe::nvfp4));
}

QuantCopy quantize_copy(const Tensor& t, std::int64_t rows, std::int64_t cols,
                        precision::LinearQuant& quant, Fp8Slot role, Along along, Use use) {
  kernels::ProfileScope scope(kernels::OpClass::convert);
  const LayerRecipe& r = quant.recipe();
  const Format element = r.format(role);
  quant::BlockSpec spec;
  switch (r.recipe) {
    case Recipe::current:
    case Recipe::blockwise: {
      numerics::Fp8BlockSettings s;
      s.element = element;
      s.power_of_two = r.power_of_two_scales;
      if (r.recipe == Recipe::current) {
        s.tile = {std::max<std::int64_t>(rows, 1), std::max<std::int64_t>(cols, 1)};
      } else if (role == Fp8Slot::weight) {
        s.tile = {r.block_size, r.block_size};
      } else {
        s.tile = along_tile(along, r.block_size);
      }
      spec = s;
      break;
    }
    case Recipe::mxfp8:
    case Recipe::mxfp6:
    case Recipe::mxfp4: {
      numerics::MxSettings s;
      s.element = element;
      s.rule = r.scale_rule;
      s.tile = along_tile(along, r.block_size);
      spec = s;
      break;
    }
    case Recipe::nvfp4: {
      numerics::Nvfp4Settings s;
      const bool rotate = r.hadamard && along == Along::rows && role != Fp8Slot::weight;
      s.tile = role == Fp8Slot::weight ? numerics::TileShape{16, 16}
                                       : along_tile(rotate ? Along::last : along, 16);
      s.hadamard = rotate;
      const std::int64_t rows_padded =
          rotate ? (rows + kHadamardGroup - 1) / kHadamardGroup * kHadamardGroup : rows;
      if (role == Fp8Slot::grad && r.stochastic_rounding) {
        s.rounding = numerics::Rounding::stochastic;
        s.seed = quant.stream().seed();
        s.counter = quant.stream().take(rows_padded * cols);
      }
      if (rotate) {
        // Rotated here, in the transposed copy itself: the quantizer then takes it as it is
        // (the same bits as rotating inside it, without a second copy).
        const Tensor tt = rotated_transpose(t, rows, cols, rows_padded);
        s.hadamard = false;
        return {std::make_shared<const quant::PackedBlocks>(
                    quant::quantize_packed(tt.f32(), Format::float32, cols, rows_padded, s)),
                Tensor(), true};
      }
      spec = s;
      break;
    }
    case Recipe::delayed:
      throw Error("quantize_copy: the delayed recipe casts per tensor (precision/fp8.hpp)");
  }
  // A copy read once, with power-of-two scales: its values straight from t (bfloat16 or
  // float32), unless some are not bfloat16 values.
  if (use == Use::once && quant::quantize_to_bf16_takes(spec) &&
      (t.format() == Format::float32 || t.format() == Format::bfloat16)) {
    QuantCopy copy;
    copy.values = Tensor::empty(Shape{rows, cols}, Format::bfloat16);
    if (quant::quantize_to_bf16(t.raw_data(), t.format(), rows, cols, spec,
                                static_cast<std::uint16_t*>(copy.values.raw_data()))) {
      probe_copy(t, rows, cols, role, copy, spec);
      return copy;
    }
  }
  const QuantCopy copy{std::make_shared<const quant::PackedBlocks>(
                           quant::quantize_packed(t.raw_data(), t.format(), rows, cols, spec)),
                       Tensor(), false};
  probe_copy(t, rows, cols, role, copy, spec);
  return copy;
}

}  // namespace mantissa::autograd::detail
