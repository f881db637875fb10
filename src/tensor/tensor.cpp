#include "mantissa/tensor/tensor.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <new>
#include <string>

#include "mantissa/checked.hpp"
#include "mantissa/error.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"

namespace mantissa::tensor {
namespace {

std::string shape_text(const Shape& s) {
  return s.to_string();
}

// Calls f(linear index in the shape, element offset in storage) for every element, in
// row-major order.
template <class F>
void for_each_offset(const Shape& shape, const Shape& strides, std::int64_t offset, F&& f) {
  const std::int64_t n = shape.numel();
  if (n == 0) return;
  const int nd = shape.size();
  std::array<std::int64_t, kMaxDims> idx{};
  std::int64_t off = offset;
  for (std::int64_t i = 0; i < n; ++i) {
    f(i, off);
    for (int d = nd - 1; d >= 0; --d) {
      if (++idx[static_cast<std::size_t>(d)] < shape[d]) {
        off += strides[d];
        break;
      }
      off -= strides[d] * (shape[d] - 1);
      idx[static_cast<std::size_t>(d)] = 0;
    }
  }
}

}  // namespace

Tensor::Tensor(StorageRef storage, Shape shape, Shape strides, std::int64_t offset, Format format)
    : storage_(std::move(storage)),
      shape_(shape),
      strides_(strides),
      offset_(offset),
      format_(format) {
  // Block-scaled element and scale formats live with their scales (numerics/block_scaling),
  // never in a Tensor: the kernels below would read them as something else.
  if (!numerics::is_tensor_format(format)) {
    throw Error("tensor of shape " + shape_.to_string() + ": " + numerics::format_use_note(format));
  }
}

void Tensor::require_defined(const char* what) const {
  if (!defined()) throw Error(std::string(what) + ": the tensor is undefined");
}

Tensor Tensor::empty(const Shape& shape, Format format) {
  const std::optional<std::int64_t> bytes =
      checked_mul(shape.numel(), static_cast<std::int64_t>(numerics::traits(format).storage_bytes));
  if (!bytes) throw Error("tensor of shape " + shape.to_string() + ": its byte size overflows");
  Storage* storage = nullptr;
  try {
    storage = Storage::create(static_cast<std::size_t>(*bytes));
  } catch (const std::bad_alloc&) {
    throw Error("tensor of shape " + shape.to_string() + " " + std::string(numerics::name(format)) +
                ": " + std::to_string(*bytes) + " bytes could not be allocated");
  }
  return Tensor(StorageRef(storage), shape, shape.contiguous_strides(), 0, format);
}

Tensor Tensor::zeros(const Shape& shape, Format format) {
  Tensor t = empty(shape, format);
  std::memset(t.raw_data(), 0, static_cast<std::size_t>(t.numel()) * t.element_bytes());
  return t;
}

Tensor Tensor::full(const Shape& shape, float value, Format format) {
  Tensor t = empty(shape, format);
  t.fill(value);
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape, Format format) {
  if (static_cast<std::int64_t>(values.size()) != shape.numel()) {
    throw Error("Tensor::from_vector: " + std::to_string(values.size()) + " values for shape " +
                shape_text(shape) + " (" + std::to_string(shape.numel()) + " elements)");
  }
  Tensor t = empty(shape, format);
  numerics::encode_array(values.data(), values.size(), format, t.raw_data());
  return t;
}

Tensor Tensor::scalar(float value, Format format) {
  return full(Shape{}, value, format);
}

std::int64_t Tensor::dim(int i) const {
  return shape_[normalize_dim(i, ndim(), "Tensor::dim")];
}

bool Tensor::is_contiguous() const {
  std::int64_t expected = 1;
  for (int d = ndim() - 1; d >= 0; --d) {
    if (shape_[d] != 1 && strides_[d] != expected) return false;
    expected *= shape_[d];
  }
  return true;
}

void* Tensor::raw_data() {
  require_defined("Tensor::raw_data");
  return static_cast<char*>(storage_->data()) + offset_ * element_bytes();
}

const void* Tensor::raw_data() const {
  require_defined("Tensor::raw_data");
  return static_cast<const char*>(storage_->data()) + offset_ * element_bytes();
}

float* Tensor::f32() {
  if (format_ != Format::float32) {
    throw Error("Tensor::f32: the tensor holds " + std::string(numerics::name(format_)));
  }
  return static_cast<float*>(raw_data());
}

const float* Tensor::f32() const {
  if (format_ != Format::float32) {
    throw Error("Tensor::f32: the tensor holds " + std::string(numerics::name(format_)));
  }
  return static_cast<const float*>(raw_data());
}

Tensor Tensor::view(const Shape& requested) const {
  require_defined("Tensor::view");
  if (!is_contiguous()) throw Error("Tensor::view: the tensor is not contiguous");
  if (requested.numel() != numel()) {
    throw Error("Tensor::view: shape " + shape_text(requested) + " does not hold the " +
                std::to_string(numel()) + " elements of shape " + shape_text(shape_));
  }
  return Tensor(storage_, requested, requested.contiguous_strides(), offset_, format_);
}

Tensor Tensor::reshape(const Shape& shape) const {
  return is_contiguous() ? view(shape) : contiguous().view(shape);
}

Tensor Tensor::transpose(int a, int b) const {
  std::vector<int> order(static_cast<std::size_t>(ndim()));
  for (int i = 0; i < ndim(); ++i) order[static_cast<std::size_t>(i)] = i;
  std::swap(order[static_cast<std::size_t>(normalize_dim(a, ndim(), "Tensor::transpose"))],
            order[static_cast<std::size_t>(normalize_dim(b, ndim(), "Tensor::transpose"))]);
  return permute(order);
}

Tensor Tensor::permute(const std::vector<int>& order) const {
  require_defined("Tensor::permute");
  if (static_cast<int>(order.size()) != ndim()) {
    throw Error("Tensor::permute: " + std::to_string(order.size()) + " axes for a tensor with " +
                std::to_string(ndim()) + " dimensions");
  }
  Shape s = shape_, st = strides_;
  std::array<bool, kMaxDims> seen{};
  for (int i = 0; i < ndim(); ++i) {
    const int d = normalize_dim(order[static_cast<std::size_t>(i)], ndim(), "Tensor::permute");
    if (seen[static_cast<std::size_t>(d)]) throw Error("Tensor::permute: axis repeated");
    seen[static_cast<std::size_t>(d)] = true;
    s[i] = shape_[d];
    st[i] = strides_[d];
  }
  return Tensor(storage_, s, st, offset_, format_);
}

Tensor Tensor::slice(int dim, std::int64_t start, std::int64_t end) const {
  require_defined("Tensor::slice");
  const int d = normalize_dim(dim, ndim(), "Tensor::slice");
  if (start < 0 || end > shape_[d] || start > end) {
    throw Error("Tensor::slice: range [" + std::to_string(start) + ", " + std::to_string(end) +
                ") out of bounds for dimension " + std::to_string(d) + " of size " +
                std::to_string(shape_[d]));
  }
  Shape s = shape_;
  s[d] = end - start;
  return Tensor(storage_, s, strides_, offset_ + start * strides_[d], format_);
}

Tensor Tensor::select(int dim, std::int64_t index) const {
  const int d = normalize_dim(dim, ndim(), "Tensor::select");
  if (index < 0 || index >= shape_[d]) {
    throw Error("Tensor::select: index " + std::to_string(index) + " out of bounds for size " +
                std::to_string(shape_[d]));
  }
  Tensor t = slice(d, index, index + 1);
  t.shape_.erase(d);
  t.strides_.erase(d);
  return t;
}

Tensor Tensor::unsqueeze(int dim) const {
  const int d = normalize_dim(dim, ndim() + 1, "Tensor::unsqueeze");
  Tensor t = *this;
  t.shape_.insert(d, 1);
  t.strides_.insert(d, d < ndim() ? strides_[d] * shape_[d] : 1);
  return t;
}

Tensor Tensor::contiguous() const {
  require_defined("Tensor::contiguous");
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape_, format_);
  out.copy_from(*this);
  return out;
}

Tensor Tensor::to(Format format, const numerics::ConvertOptions& options) const {
  require_defined("Tensor::to");
  if (format == format_) return contiguous();
  const Tensor c = contiguous();
  const auto n = static_cast<std::size_t>(numel());
  if (format == Format::float32) {
    Tensor out = empty(shape_, Format::float32);
    numerics::decode_array(c.raw_data(), n, format_, out.f32());
    return out;
  }
  const Tensor f = format_ == Format::float32 ? c : c.to(Format::float32);
  Tensor out = empty(shape_, format);
  numerics::encode_array(f.f32(), n, format, out.raw_data(), options);
  return out;
}

void Tensor::copy_from(const Tensor& src) {
  require_defined("Tensor::copy_from");
  if (!src.defined()) throw Error("Tensor::copy_from: the source tensor is undefined");
  if (!(src.shape() == shape_)) {
    throw Error("Tensor::copy_from: shape " + shape_text(src.shape()) + " into " +
                shape_text(shape_));
  }
  if (src.format_ == format_ && src.is_contiguous() && is_contiguous()) {
    std::memcpy(raw_data(), src.raw_data(), static_cast<std::size_t>(numel()) * element_bytes());
    return;
  }
  // General case: element by element through float32 (decode, then encode to our format).
  const std::vector<float> values = src.to_vector();
  const numerics::Layout& l = numerics::layout(format_);
  const numerics::Overflow o = numerics::traits(format_).default_overflow;
  char* base = static_cast<char*>(storage_->data());
  const int eb = element_bytes();
  for_each_offset(shape_, strides_, offset_, [&](std::int64_t i, std::int64_t off) {
    const float v = values[static_cast<std::size_t>(i)];
    if (format_ == Format::float32) {
      std::memcpy(base + off * sizeof(float), &v, sizeof(float));
    } else {
      const std::uint32_t b = numerics::encode(v, l, numerics::Rounding::nearest_even, o);
      std::memcpy(base + off * eb, &b, static_cast<std::size_t>(eb));
    }
  });
}

void Tensor::fill(float value) {
  require_defined("Tensor::fill");
  const Tensor one = from_vector({value}, Shape{1}, format_);
  const char* pattern = static_cast<const char*>(one.raw_data());
  char* base = static_cast<char*>(storage_->data());
  const int eb = element_bytes();
  for_each_offset(shape_, strides_, offset_, [&](std::int64_t, std::int64_t off) {
    std::memcpy(base + off * eb, pattern, static_cast<std::size_t>(eb));
  });
}

std::vector<float> Tensor::to_vector() const {
  require_defined("Tensor::to_vector");
  std::vector<float> out(static_cast<std::size_t>(numel()));
  if (is_contiguous()) {
    numerics::decode_array(raw_data(), out.size(), format_, out.data());
    return out;
  }
  const char* base = static_cast<const char*>(storage_->data());
  const int eb = element_bytes();
  const numerics::Layout& l = numerics::layout(format_);
  for_each_offset(shape_, strides_, offset_, [&](std::int64_t i, std::int64_t off) {
    std::uint32_t b = 0;
    std::memcpy(&b, base + off * eb, static_cast<std::size_t>(eb));
    out[static_cast<std::size_t>(i)] =
        format_ == Format::float32 ? std::bit_cast<float>(b) : numerics::decode(b, l);
  });
  return out;
}

float Tensor::item() const {
  if (numel() != 1) {
    throw Error("Tensor::item: the tensor has " + std::to_string(numel()) +
                " elements, not 1 (shape " + shape_text(shape_) + ")");
  }
  return to_vector()[0];
}

}  // namespace mantissa::tensor
