#pragma once
// Internal: the ops' side of "which layer loses what" (precision/quant_probe.hpp). A
// RoundingProbe stands for one rounding site of an op (its layer, op and role); on a sampled
// step it measures what the site's roundings lose and records it in the step's probe, on
// every other step it is inert (made with one thread-local read, used with one test).
#include "mantissa/precision/fp8.hpp"
#include "mantissa/precision/quant_probe.hpp"
#include "mantissa/tensor/tensor.hpp"

namespace mantissa::autograd::detail {

using tensor::Tensor;

// The role of a GEMM operand a recipe quantizes (its fp8 slot).
inline precision::QuantRole role_of(precision::Fp8Slot slot) {
  switch (slot) {
    case precision::Fp8Slot::input:
      return precision::QuantRole::input;
    case precision::Fp8Slot::weight:
      return precision::QuantRole::weight;
    case precision::Fp8Slot::grad:
      break;
  }
  return precision::QuantRole::grad;
}

class RoundingProbe {
 public:
  // Reads the calling thread's probe: make it on the thread that runs the op. `layer`: the
  // layer the op belongs to (a node's saved one in a backward).
  RoundingProbe(precision::QuantRole role, const char* op,
                const precision::LayerName& layer = precision::current_layer());

  bool active() const { return probe_ != nullptr; }
  // The probe to hand to code that may run it, or nullptr when inert.
  const RoundingProbe* if_active() const { return active() ? this : nullptr; }

  // What rounding `before` to `after` lost (the same elements; `after` in the format rounded
  // to, after ~ before * scale). Nothing when the formats are equal (no rounding happened) or
  // `after` is float32. With `note_scale`, the scale enters the site's scale range.
  void rounded(const Tensor& before, const Tensor& after, double scale = 1.0,
               bool note_scale = false) const;

  // For results written a block at a time (a GEMM's epilogue, on any thread): adds what
  // writing n float32 values v into t from element `at` on lost (call it after writing them)
  // to `into`, which record() then adds to the step's probe once per block.
  void add_written(precision::QuantStats& into, const float* v, const Tensor& t, std::int64_t at,
                   std::int64_t n) const;
  void record(const precision::QuantStats& stats) const;

 private:
  precision::QuantProbe* probe_;
  precision::QuantSite site_;
};

}  // namespace mantissa::autograd::detail
