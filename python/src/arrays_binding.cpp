// empty(shape, dtype): numpy arrays for results, with large ones in the library's page memory
// (mantissa/tensor/page_memory.hpp): a new 64 MiB result then faults in 32 large pages rather
// than 16,384 small ones, which is most of a bfloat16 or float16 conversion's time; a freed
// result's pages are kept for the next result of its size (page_memory.hpp).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <limits>
#include <memory>
#include <new>
#include <vector>

#include "bindings.hpp"
#include "mantissa/error.hpp"
#include "mantissa/tensor/page_memory.hpp"

namespace py = pybind11;

namespace mantissa::python {
namespace {

struct PageBuffer {
  void* data;
  std::size_t bytes;
};

py::array empty(const std::vector<py::ssize_t>& shape, const py::object& type) {
  const py::dtype dtype = py::dtype::from_args(type);
  // The Python attribute, not dtype::itemsize(): pybind11 2.10 reads numpy 1's descriptor
  // layout, which numpy 2 changed.
  const auto itemsize = dtype.attr("itemsize").cast<py::ssize_t>();
  std::size_t bytes = static_cast<std::size_t>(itemsize);
  for (const py::ssize_t d : shape) {
    if (d < 0) throw Error("empty: a negative dimension " + std::to_string(d));
    if (d != 0 && bytes > std::numeric_limits<std::size_t>::max() / static_cast<std::size_t>(d)) {
      throw Error("empty: the array's size overflows");
    }
    bytes *= static_cast<std::size_t>(d);
  }
  if (bytes < tensor::kPageMemoryFrom)
    return py::module_::import("numpy").attr("empty")(shape, dtype);
  const auto release = [](void* p) noexcept {
    auto* b = static_cast<PageBuffer*>(p);
    tensor::free_pages(b->data, b->bytes);
    delete b;
  };
  std::unique_ptr<PageBuffer, decltype(release)> held(
      new PageBuffer{tensor::allocate_pages(bytes), bytes}, release);
  PageBuffer* buffer = held.get();
  py::capsule owner(buffer, release);  // owns the pages from here on
  held.release();
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = itemsize;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return py::array(dtype, shape, strides, buffer->data, owner);
}

}  // namespace

void bind_arrays(py::module_& m) {
  m.def("empty", &empty, py::arg("shape"), py::arg("dtype"),
        "An uninitialized C-contiguous array; large ones in 2 MiB pages where the kernel has "
        "them");
  m.def("kept_page_bytes", &tensor::kept_page_bytes,
        "Bytes of freed large results kept for reuse (at most 256 MiB; the kernel may reclaim "
        "them under memory pressure)");
  m.def("release_kept_pages", &tensor::release_kept_pages,
        "Unmaps the freed large results kept for reuse");
}

}  // namespace mantissa::python
