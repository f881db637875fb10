#pragma once
// The vendor's cstorch.amp.set_half_dtype and autocast, in C++: the half format automatic
// mixed precision computes in (float16 until set, as there), and a scoped precision Policy
// (precision::Autocast) that applies it. cbfloat16 is a real format here, so set_half_dtype
// returns the format itself where the vendor returns a proxy torch dtype.
#include <string_view>

#include "mantissa/numerics/format.hpp"
#include "mantissa/precision/policy.hpp"

namespace mantissa::amp {

// Sets the process-wide half format: float16, bfloat16 or cbfloat16 (anything else throws
// mantissa::Error naming fp16_type and the allowed values). Returns it.
numerics::Format set_half_dtype(numerics::Format half);
// The vendor's string form: set_half_dtype("cbfloat16").
numerics::Format set_half_dtype(std::string_view half);
numerics::Format half_dtype();

// The precision Policy {half_dtype(), precision_opt_level} for the guard's lifetime:
//   auto cast = amp::autocast();  // forward passes in the half format
precision::Autocast autocast(int precision_opt_level = 1);

}  // namespace mantissa::amp
