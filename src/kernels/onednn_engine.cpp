#include "onednn_engine.hpp"

#include "mantissa/kernels/openmp_teams.hpp"

namespace mantissa::kernels {

dnnl::engine& onednn_engine() {
  static dnnl::engine e = [] {
    settle_openmp_teams();
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return e;
}

}  // namespace mantissa::kernels
