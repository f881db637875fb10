#include "op_support.hpp"

#include <cstring>

#include "mantissa/kernels/parallel.hpp"
#include "mantissa/kernels/pointwise.hpp"
#include "mantissa/kernels/scratch.hpp"

namespace mantissa::autograd::detail {
namespace {

kernels::ScratchBuffer& read_buffer(int slot) {
  thread_local kernels::ScratchBuffer buffers[Decoded::kSlots];
  return buffers[slot];
}

}  // namespace

Tensor to_format(const Tensor& t, Format f, bool fresh) {
  if (t.format() == f && t.is_contiguous() && !fresh) return t;
  const Tensor c = t.contiguous();
  Tensor out = Tensor::empty(c.shape(), f);
  const char* src = static_cast<const char*>(c.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  const int in_bytes = c.element_bytes(), out_bytes = out.element_bytes();
  kernels::parallel_chunks(c.numel(), [&](std::int64_t begin, std::int64_t end) {
    numerics::convert_array(src + begin * in_bytes, c.format(),
                            static_cast<std::size_t>(end - begin), dst + begin * out_bytes, f);
  });
  return out;
}

namespace {
// into (float32, contiguous) op= g's values (any format), on all threads.
template <bool kAdd>
void combine_into(Tensor& into, const Tensor& g) {
  if (into.numel() != g.numel()) {
    throw Error("backward: gradients of " + std::to_string(into.numel()) + " and " +
                std::to_string(g.numel()) + " elements cannot be summed");
  }
  const Decoded in(g, 0);
  float* a = into.f32();
  kernels::parallel_chunks(into.numel(), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t t0 = begin; t0 < end; t0 += kTileElements) {
      const std::int64_t n = std::min(kTileElements, end - t0);
      const float* b = in.range(t0, n);
      if constexpr (kAdd) {
        for (std::int64_t i = 0; i < n; ++i) a[t0 + i] += b[i];
      } else {
        std::copy(b, b + n, a + t0);
      }
    }
  });
}
}  // namespace

void add_into(Tensor& into, const Tensor& g) {
  combine_into<true>(into, g);
}

void assign_into(Tensor& into, const Tensor& g) {
  combine_into<false>(into, g);
}

Tensor sum_as_float32(const Tensor& a, const Tensor& b) {
  if (a.numel() != b.numel()) {
    throw Error("backward: gradients of " + std::to_string(a.numel()) + " and " +
                std::to_string(b.numel()) + " elements cannot be summed");
  }
  // Contiguous bfloat16 or float32 operands: widened and added in registers.
  const auto direct = [](const Tensor& t) {
    return t.is_contiguous() && (t.format() == Format::bfloat16 || t.format() == Format::float32);
  };
  if (direct(a) && direct(b)) {
    Tensor out = Tensor::empty(a.shape(), Format::float32);
    kernels::sum_to_float32({a.raw_data(), a.format() == Format::bfloat16},
                            {b.raw_data(), b.format() == Format::bfloat16}, out.f32(), a.numel());
    return out;
  }
  const Decoded ad(a, 0), bd(b, 1);
  return produce(a.shape(), Format::float32, 1, [&](std::int64_t r0, std::int64_t r1, float* out) {
    const float* x = ad.range(r0, r1 - r0);
    const float* y = bd.range(r0, r1 - r0);
    for (std::int64_t i = 0; i < r1 - r0; ++i) out[i] = x[i] + y[i];
  });
}

Decoded::Decoded(const Tensor& t, int slot) : t_(t.contiguous()), slot_(slot) {
  if (slot < 0 || slot >= kSlots) throw Error("Decoded: slot out of range");
  if (t_.format() == Format::float32) f32_ = t_.f32();
}

const float* Decoded::range(std::int64_t begin, std::int64_t count) const {
  if (f32_ != nullptr) return f32_ + begin;
  float* buf =
      read_buffer(slot_).as<float>(static_cast<std::size_t>(std::max<std::int64_t>(count, 1)));
  numerics::decode_array(static_cast<const char*>(t_.raw_data()) + begin * t_.element_bytes(),
                         static_cast<std::size_t>(count), t_.format(), buf);
  return buf;
}

float* tile_buffer(std::int64_t n) {
  thread_local kernels::ScratchBuffer buffer;
  return buffer.as<float>(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
}

void write_values(Tensor& t, std::int64_t at, const float* v, std::int64_t n) {
  numerics::encode_array(v, static_cast<std::size_t>(n), t.format(),
                         static_cast<char*>(t.raw_data()) + at * t.element_bytes());
}

bool any_requires_grad(const std::vector<Variable>& inputs) {
  for (const Variable& v : inputs) {
    if (v.defined() && v.requires_grad()) return true;
  }
  return false;
}

void shape_error(const char* op, const std::string& what) {
  throw Error(std::string(op) + ": " + what);
}

}  // namespace mantissa::autograd::detail
