#include "linear_support.hpp"

#include "mantissa/kernels/pointwise.hpp"
#include "mantissa/kernels/scratch.hpp"

namespace mantissa::autograd::detail {

LinearSizes linear_sizes(const Variable& x, const Variable& weight, const Variable& bias) {
  const Shape& xs = x.shape();
  const Shape& ws = weight.shape();
  if (ws.size() != 2 || xs.empty() || xs.back() != ws[1]) {
    shape_error("linear", "input " + xs.to_string() + " and weight " + ws.to_string() +
                              " (expected weight [out, in] with in = the input's last dim)");
  }
  const std::int64_t in = ws[1], out = ws[0];
  if (bias.defined() && !(bias.shape() == Shape{out})) {
    shape_error("linear",
                "bias " + bias.shape().to_string() + " (expected [" + std::to_string(out) + "])");
  }
  return {in > 0 ? xs.numel() / in : 0, in, out};
}

Shape linear_output_shape(const Shape& x, std::int64_t out) {
  Shape ys(x.begin(), x.end() - 1);
  ys.push_back(out);
  return ys;
}

kernels::GemmEpilogue write_rows(Tensor& y, std::int64_t base, std::int64_t ld, const float* bias,
                                 const RoundingProbe* probe, std::optional<float> factor) {
  if (y.format() == Format::float32) probe = nullptr;  // nothing is rounded
  return [&y, base, ld, bias, probe, factor](const kernels::GemmTile& t) {
    std::optional<precision::QuantStats> lost;
    if (probe != nullptr) lost.emplace(y.format());
    for (std::int64_t r = 0; r < t.rows; ++r) {
      float* v = t.values + r * t.ld;
      if (factor) {
        for (std::int64_t j = 0; j < t.cols; ++j) {
          v[j] = v[j] * *factor + (bias != nullptr ? bias[t.col0 + j] : 0.0f);
        }
      } else if (bias != nullptr) {
        for (std::int64_t j = 0; j < t.cols; ++j) v[j] += bias[t.col0 + j];
      }
      const std::int64_t at = base + (t.row0 + r) * ld + t.col0;
      write_values(y, at, v, t.cols);
      if (lost) probe->add_written(*lost, v, y, at, t.cols);
    }
    if (lost) probe->record(*lost);
  };
}

Tensor bias_gradient(const Tensor& g, std::int64_t rows, std::int64_t out) {
  Tensor db = Tensor::zeros(Shape{out});
  float* d = db.f32();
  const Decoded gd(g, 0);
  const bool bf16 = gd.tensor().format() == Format::bfloat16;
  const auto* bits = static_cast<const std::uint16_t*>(gd.tensor().raw_data());
  // Column sums in row order; each thread owns a range of columns.
  kernels::parallel_chunks(
      out,
      [&](std::int64_t c0, std::int64_t c1) {
        if (bf16) {  // widened in registers: the same sums
          kernels::add_bf16_rows(bits + c0, rows, out, c1 - c0, d + c0);
          return;
        }
        for (std::int64_t r = 0; r < rows; ++r) {
          const float* gr = gd.range(r * out + c0, c1 - c0);
          for (std::int64_t c = c0; c < c1; ++c) d[c] += gr[c - c0];
        }
      },
      std::max<std::int64_t>(16, kernels::kParallelMinElements / std::max<std::int64_t>(rows, 1)));
  return db;
}

void decode_with_column_sums(const Tensor& g, std::int64_t rows, std::int64_t out, float* values,
                             float* column_sums) {
  const char* base = static_cast<const char*>(g.raw_data());
  const std::int64_t bytes = g.element_bytes();
  // Each thread owns a range of columns, as in bias_gradient.
  kernels::parallel_chunks(
      out,
      [&](std::int64_t c0, std::int64_t c1) {
        for (std::int64_t r = 0; r < rows; ++r) {
          float* v = values + r * out + c0;
          numerics::convert_array(base + (r * out + c0) * bytes, g.format(),
                                  static_cast<std::size_t>(c1 - c0), v, Format::float32);
          if (column_sums == nullptr) continue;
          for (std::int64_t c = c0; c < c1; ++c) column_sums[c] += v[c - c0];
        }
      },
      std::max<std::int64_t>(16, kernels::kParallelMinElements / std::max<std::int64_t>(rows, 1)));
}

BackwardOperand linear_backward_operand(const Tensor& g, const LinearSizes& s,
                                        const kernels::GemmPrecision& gp, bool dx, bool dw,
                                        float* column_sums) {
  constexpr std::int64_t kDecodeOnceBytes = std::int64_t{16} << 20;
  const auto either = [&](bool (*copies)(const kernels::GemmShape&,
                                         const kernels::GemmPrecision&)) {
    return (dx && copies(input_grad_product(s), gp)) || (dw && copies(weight_grad_product(s), gp));
  };
  if (g.format() == Format::float32) return {operand(g), false};
  // fp8 codes both products would copy to bfloat16: converted once (no column sums made).
  if (g.element_bytes() == 1 && column_sums == nullptr && s.rows * s.out * 2 <= kDecodeOnceBytes &&
      either(kernels::gemm_copies_to_bf16)) {
    thread_local kernels::ScratchBuffer converted;
    auto* bits = converted.as<std::uint16_t>(static_cast<std::size_t>(s.rows * s.out));
    const auto* codes = static_cast<const std::uint8_t*>(g.raw_data());
    kernels::parallel_chunks(s.rows * s.out, [&](std::int64_t begin, std::int64_t end) {
      numerics::convert_array(codes + begin, g.format(), static_cast<std::size_t>(end - begin),
                              bits + begin, Format::bfloat16);
    });
    return {kernels::Operand(bits, Format::bfloat16), true};
  }
  if (s.rows * s.out * 4 > kDecodeOnceBytes || !either(kernels::gemm_copies_to_float32)) {
    return {operand(g), false};
  }
  thread_local kernels::ScratchBuffer decoded;
  float* values = decoded.as<float>(static_cast<std::size_t>(s.rows * s.out));
  decode_with_column_sums(g, s.rows, s.out, values, column_sums);
  return {kernels::Operand(values), true};
}

}  // namespace mantissa::autograd::detail
