// The blocked GEMM's AMX micro-kernel: 32 x 32 blocks of C on the tiles (amx_tiles.cpp).
#include "../amx_tiles.hpp"
#include "micro_kernels.hpp"

namespace mantissa::kernels::gemm_detail {

MicroKernelInfo micro_kernel_amx() {
  MicroKernelInfo info{GemmIsa::avx512, 32, 32, nullptr};
  info.pair_fn = detail::amx_micro_kernel;
  info.pair_block = 16;
  info.a_rows = true;
  info.enter = detail::amx_load_tiles;
  info.leave = detail::amx_release_tiles;
  return info;
}

}  // namespace mantissa::kernels::gemm_detail
