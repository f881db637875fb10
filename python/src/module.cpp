// mantissa._core: the C++ library as the Python package's private extension module. The
// public functions, their argument checks and numpy handling are in python/mantissa/.
#include <pybind11/pybind11.h>

#include "bindings.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/openmp_teams.hpp"

PYBIND11_MODULE(_core, m) {
  m.doc() = "mantissa's C++ library (use the package mantissa, not this module)";
  // Teams of the size the kernels plan for, whatever OMP_DYNAMIC and OMP_THREAD_LIMIT say
  // (the interpreter's main thread imports the module).
  mantissa::kernels::settle_openmp_teams();
  // mantissa::Error becomes mantissa.Error (a ValueError) carrying the library's message.
  pybind11::register_exception<mantissa::Error>(m, "Error", PyExc_ValueError);
  mantissa::python::bind_arrays(m);
  mantissa::python::bind_formats(m);
  mantissa::python::bind_blocks(m);
  mantissa::python::bind_runs(m);
}
