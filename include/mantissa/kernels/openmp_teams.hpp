#pragma once
// OpenMP teams of the size the kernels plan for. oneDNN's primitives split their work for
// omp_get_max_threads() threads and compute wrong results in a smaller team, which
// OMP_DYNAMIC=true or an OMP_THREAD_LIMIT below the thread count give them.
namespace mantissa::kernels {

// Turns dynamic adjustment of team sizes off and lowers the thread count to the thread limit
// where it exceeds it, for the calling thread (call it from the main thread, outside parallel
// regions, before the first product: the `mantissa` program and the Python module do; the
// oneDNN routes call it when they first start).
void settle_openmp_teams();

}  // namespace mantissa::kernels
