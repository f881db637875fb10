#pragma once
// Tensor: a shape, strides and offset over pooled storage, with elements in any numerics
// format (16- and 8-bit formats stored packed). Copies share storage; views (reshape,
// transpose, permute, slice, select) share it too.
#include <cstdint>
#include <vector>

#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/format.hpp"
#include "mantissa/tensor/shape.hpp"
#include "mantissa/tensor/storage.hpp"

namespace mantissa::tensor {

using numerics::Format;

class Tensor {
 public:
  Tensor() = default;  // undefined

  static Tensor empty(const Shape& shape, Format format = Format::float32);
  static Tensor zeros(const Shape& shape, Format format = Format::float32);
  static Tensor full(const Shape& shape, float value, Format format = Format::float32);
  // Values rounded (nearest-even) to `format`. Throws if values.size() != shape.numel().
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape,
                            Format format = Format::float32);
  static Tensor scalar(float value, Format format = Format::float32);

  bool defined() const { return static_cast<bool>(storage_); }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  std::int64_t offset() const { return offset_; }
  int ndim() const { return shape_.size(); }
  std::int64_t dim(int i) const;  // negative i counts from the end
  std::int64_t numel() const { return shape_.numel(); }
  Format format() const { return format_; }
  int element_bytes() const { return numerics::traits(format_).storage_bytes; }
  bool is_contiguous() const;
  // True when both share the same storage.
  bool shares_storage(const Tensor& other) const { return storage_.get() == other.storage_.get(); }
  // True when no other tensor (or view) refers to this one's storage.
  bool owns_storage_alone() const { return storage_ && storage_->use_count() == 1; }

  // Pointer to the first element (at the offset). Typed access checks the format.
  void* raw_data();
  const void* raw_data() const;
  float* f32();
  const float* f32() const;

  // Views.
  Tensor view(const Shape& shape) const;     // contiguous tensors only, same element count
  Tensor reshape(const Shape& shape) const;  // a view when contiguous, else a copy
  Tensor transpose(int a, int b) const;
  Tensor permute(const std::vector<int>& order) const;
  Tensor slice(int dim, std::int64_t start, std::int64_t end) const;
  Tensor select(int dim, std::int64_t index) const;
  Tensor unsqueeze(int dim) const;

  // Copies.
  Tensor contiguous() const;  // itself when already contiguous
  Tensor clone() const;       // always a fresh contiguous copy
  // A contiguous copy converted to `format` (itself, contiguous, when the format matches).
  Tensor to(Format format, const numerics::ConvertOptions& options = {}) const;
  // Copies src's values (converted to this tensor's format) into this tensor; same shape.
  void copy_from(const Tensor& src);
  void fill(float value);

  // Decoded values in row-major order of the shape.
  std::vector<float> to_vector() const;
  float item() const;  // the one element of a 1-element tensor

 private:
  Tensor(StorageRef storage, Shape shape, Shape strides, std::int64_t offset, Format format);
  void require_defined(const char* what) const;

  StorageRef storage_;
  Shape shape_;
  Shape strides_;  // in elements
  std::int64_t offset_ = 0;
  Format format_ = Format::float32;
};

}  // namespace mantissa::tensor
