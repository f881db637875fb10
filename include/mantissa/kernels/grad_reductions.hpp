#pragma once
// One pass over a gradient buffer for the optimizer step: optionally scale it in place
// (unscaling by 1 / loss scale, clipping by a norm coefficient) and measure the sum of squares
// of the result in double. The sum is finite exactly when every element is (a finite float
// squared stays far inside double's range), so it doubles as the overflow check.
// Partial sums are taken over fixed blocks of elements and added in block order, so the
// result does not depend on the number of threads.
#include <cstdint>

#include "mantissa/numerics/format.hpp"

namespace mantissa::kernels {

// x[i] *= scale (skipped when scale == 1); returns the sum of x[i]^2 after scaling.
double scale_and_sum_squares(float* x, std::int64_t n, float scale);
double sum_squares(const float* x, std::int64_t n);

// The scalar twin: one sequential double sum.
double scale_and_sum_squares_ref(float* x, std::int64_t n, float scale);

// Whether any of n elements stored in `format` is inf or NaN, read as bit patterns (a format
// without either: false). Stops at the first block that holds one. On the calling thread: the
// overflow attribution of a backward (autograd/nonfinite_watch.hpp) checks each gradient right
// after the op that made it, while it is in cache, and a parallel region's start (waking a
// sleeping thread) costs more than such a scan.
bool any_nonfinite(const void* data, numerics::Format format, std::int64_t n);
// The scalar twin: each element decoded by the scalar codec and tested with std::isfinite.
bool any_nonfinite_ref(const void* data, numerics::Format format, std::int64_t n);

}  // namespace mantissa::kernels
