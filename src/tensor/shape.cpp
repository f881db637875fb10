#include "mantissa/tensor/shape.hpp"

#include "mantissa/checked.hpp"
#include "mantissa/error.hpp"

namespace mantissa::tensor {

Shape::Shape(std::initializer_list<std::int64_t> dims) {
  for (std::int64_t d : dims) push_back(d);
}

void Shape::push_back(std::int64_t v) {
  if (n_ == kMaxDims) {
    throw Error("tensor shape: more than " + std::to_string(kMaxDims) + " dimensions");
  }
  if (v < 0) throw Error("tensor shape: negative dimension " + std::to_string(v));
  d_[static_cast<std::size_t>(n_++)] = v;
}

void Shape::erase(int i) {
  if (i < 0 || i >= n_) {
    throw Error("tensor shape " + to_string() + ": erase at " + std::to_string(i) +
                " (expected 0.." + std::to_string(n_ - 1) + ")");
  }
  for (int j = i; j + 1 < n_; ++j)
    d_[static_cast<std::size_t>(j)] = d_[static_cast<std::size_t>(j + 1)];
  --n_;
}

void Shape::insert(int i, std::int64_t v) {
  if (i < 0 || i > n_) {
    throw Error("tensor shape " + to_string() + ": insert at " + std::to_string(i) +
                " (expected 0.." + std::to_string(n_) + ")");
  }
  if (v < 0) throw Error("tensor shape: negative dimension " + std::to_string(v));
  push_back(0);
  for (int j = n_ - 1; j > i; --j)
    d_[static_cast<std::size_t>(j)] = d_[static_cast<std::size_t>(j - 1)];
  d_[static_cast<std::size_t>(i)] = v;
}

std::int64_t Shape::numel() const {
  const std::optional<std::int64_t> n = checked_product(*this);
  if (!n) throw Error("tensor shape " + to_string() + ": the element count overflows int64");
  return *n;
}

Shape Shape::contiguous_strides() const {
  Shape s;
  for (int i = 0; i < n_; ++i) s.push_back(0);
  std::int64_t stride = 1;
  for (int i = n_ - 1; i >= 0; --i) {
    s[i] = stride;
    stride *= (*this)[i];
  }
  return s;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < n_; ++i) {
    if (i) s += ", ";
    s += std::to_string((*this)[i]);
  }
  return s + "]";
}

int normalize_dim(int dim, int ndim, const char* what) {
  const int d = dim < 0 ? dim + ndim : dim;
  if (d < 0 || d >= ndim) {
    throw Error(std::string(what) + ": dimension " + std::to_string(dim) +
                " out of range for a tensor with " + std::to_string(ndim) + " dimensions");
  }
  return d;
}

}  // namespace mantissa::tensor
