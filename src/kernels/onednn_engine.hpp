#pragma once
// The one oneDNN CPU engine the matrix-product and convolution routes share.
#include <oneapi/dnnl/dnnl.hpp>

namespace mantissa::kernels {

// Made on first use, after settle_openmp_teams() (openmp_teams.hpp): oneDNN's primitives
// need teams of the size omp_get_max_threads() says.
dnnl::engine& onednn_engine();

}  // namespace mantissa::kernels
