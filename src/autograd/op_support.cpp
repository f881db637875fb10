#include "op_support.hpp"

#include "kernels/parallel.hpp"

namespace mantissa::autograd::detail {

void round_in_place(float* x, std::int64_t n, Format f) {
  if (f == Format::float32) return;
  kernels::ProfileScope scope(kernels::OpClass::convert);
  kernels::parallel_chunks(n, [&](std::int64_t begin, std::int64_t end) {
    numerics::round_to_format(x + begin, static_cast<std::size_t>(end - begin), f);
  });
}

bool any_requires_grad(const std::vector<Variable>& inputs) {
  for (const Variable& v : inputs) {
    if (v.defined() && v.requires_grad()) return true;
  }
  return false;
}

void shape_error(const char* op, const std::string& what) {
  throw Error(std::string(op) + ": " + what);
}

}  // namespace mantissa::autograd::detail
