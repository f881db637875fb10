#include "mantissa/kernels/openmp_teams.hpp"

#include <omp.h>

namespace mantissa::kernels {

void settle_openmp_teams() {
  omp_set_dynamic(0);
  const int limit = omp_get_thread_limit();
  if (limit > 0 && omp_get_max_threads() > limit) omp_set_num_threads(limit);
}

}  // namespace mantissa::kernels
