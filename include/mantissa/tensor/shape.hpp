#pragma once
// Shapes and strides held inline (no heap): up to kMaxDims dimensions.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace mantissa::tensor {

inline constexpr int kMaxDims = 6;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);
  template <class It>
  Shape(It first, It last) {
    for (; first != last; ++first) push_back(static_cast<std::int64_t>(*first));
  }

  int size() const { return n_; }
  bool empty() const { return n_ == 0; }
  std::int64_t operator[](int i) const { return d_[static_cast<std::size_t>(i)]; }
  std::int64_t& operator[](int i) { return d_[static_cast<std::size_t>(i)]; }
  const std::int64_t* begin() const { return d_.data(); }
  const std::int64_t* end() const { return d_.data() + n_; }
  std::int64_t back() const { return d_[static_cast<std::size_t>(n_ - 1)]; }
  void push_back(std::int64_t v);
  void erase(int i);
  void insert(int i, std::int64_t v);

  // Product of the dimensions (1 for a scalar).
  std::int64_t numel() const;
  // Row-major strides for this shape.
  Shape contiguous_strides() const;
  std::string to_string() const;  // "[2, 3, 4]"

  friend bool operator==(const Shape& a, const Shape& b) {
    if (a.n_ != b.n_) return false;
    for (int i = 0; i < a.n_; ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }

 private:
  std::array<std::int64_t, kMaxDims> d_{};
  int n_ = 0;
};

// Normalizes a possibly negative dimension index; throws mantissa::Error naming `what`.
int normalize_dim(int dim, int ndim, const char* what);

}  // namespace mantissa::tensor
