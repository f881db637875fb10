#pragma once
// The parts of the extension module mantissa._core (python/src/module.cpp puts them together).
#include <pybind11/pybind11.h>

namespace mantissa::python {

// empty: result arrays, large ones in the library's page memory.
void bind_arrays(pybind11::module_& m);
// formats(), encode_into, decode_into, round_inplace: the codecs on numpy arrays.
void bind_formats(pybind11::module_& m);
// quantize_blocks: the block quantizers (MX, NVFP4, fp8 blocks) on 2-D float32 arrays.
void bind_blocks(pybind11::module_& m);
// train, read_run_log, write_report: runs.
void bind_runs(pybind11::module_& m);

}  // namespace mantissa::python
