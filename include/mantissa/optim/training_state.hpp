#pragma once
// What the optimizer keeps, and in which format (issue 17: training without float32 copies).
//
// master_weights:
//   float32              parameters float32, as always (the default)
//   bfloat16             parameters stored as bfloat16, each update rounded to nearest: the
//                        baseline the two below improve on (small updates vanish)
//   bfloat16_stochastic  ... rounded stochastically (counter-based, seeded: a run reproduces)
//   bfloat16_kahan       ... rounded to nearest with a bfloat16 compensation buffer carrying
//                        each rounding error into the next update (Kahan summation)
// With bfloat16 master weights the gradients are bfloat16 too (the parameter's format).
// state_dtype: the optimizer's moment buffers (tensors the size of the parameter) in float32
// or bfloat16 (rounded to nearest); scalar state stays float32.
// Each update runs in float32 on the parameter, its gradient and its state decoded, then
// stores them back: the optimizers' update rules are the same in every format.
#include <cstdint>

#include "mantissa/names.hpp"
#include "mantissa/numerics/format.hpp"

namespace mantissa::optim {

enum class MasterWeights : std::uint8_t { float32, bfloat16, bfloat16_stochastic, bfloat16_kahan };
inline constexpr NameTable<MasterWeights, 4> kMasterWeightsNames = {{
    {"float32", MasterWeights::float32},
    {"bfloat16", MasterWeights::bfloat16},
    {"bfloat16_stochastic", MasterWeights::bfloat16_stochastic},
    {"bfloat16_kahan", MasterWeights::bfloat16_kahan},
}};
static_assert(in_enum_order(kMasterWeightsNames,
                            static_cast<std::size_t>(MasterWeights::bfloat16_kahan) + 1));

// The formats of the moment buffers (the config's state_dtype, `bench train --state-dtype`).
inline constexpr NameTable<numerics::Format, 2> kStateFormatNames = {{
    {"float32", numerics::Format::float32},
    {"bfloat16", numerics::Format::bfloat16},
}};

struct TrainingState {
  MasterWeights master_weights = MasterWeights::float32;
  numerics::Format state_format = numerics::Format::float32;  // one of kStateFormats
  std::uint64_t seed = 0;  // the stochastic rounding stream (the run's seed)

  bool low_precision_weights() const { return master_weights != MasterWeights::float32; }
  numerics::Format weight_format() const {
    return low_precision_weights() ? numerics::Format::bfloat16 : numerics::Format::float32;
  }
  // Throws mantissa::Error naming state_dtype when it is not float32 or bfloat16.
  void validate() const;
};

}  // namespace mantissa::optim
