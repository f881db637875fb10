#pragma once
// Gradient clipping over a set of parameters (those without a gradient are skipped).
#include <vector>

#include "mantissa/autograd/variable.hpp"

namespace mantissa::optim {

// The factor global-norm clipping multiplies every gradient by: min(max_norm / (norm + 1e-6),
// 1). One formula for clip_grad_norm_ and the GradScaler's clipping alike.
double clip_coefficient(double norm, double max_norm);
// Multiplies every gradient by `coefficient` (parameters without a gradient are skipped).
void scale_grads_(std::vector<autograd::Variable>& params, double coefficient);

// The global L2 norm of all gradients, accumulated in double. A non-finite norm (inf or NaN
// in some gradient) is returned as it is and the gradients are left untouched: no silent
// change. Otherwise, when norm > max_norm, every gradient is scaled by
// max_norm / (norm + 1e-6). Throws mantissa::Error when max_norm <= 0.
double clip_grad_norm_(std::vector<autograd::Variable>& params, double max_norm);
// The same on a temporary list (`clip_grad_norm_(model.parameters(), 1.0)`, as in PyTorch):
// a Variable is a handle, so the gradients clipped are the model's own.
double clip_grad_norm_(std::vector<autograd::Variable>&& params, double max_norm);
// The global L2 norm, without clipping.
double grad_norm(const std::vector<autograd::Variable>& params);
// Clamps every gradient element to [-clip_value, clip_value]. Throws when clip_value <= 0.
void clip_grad_value_(std::vector<autograd::Variable>& params, double clip_value);
void clip_grad_value_(std::vector<autograd::Variable>&& params, double clip_value);

}  // namespace mantissa::optim
