#pragma once
// Internal. A grow-only, 64-byte-aligned buffer: per-thread scratch that stops allocating once
// it has reached the largest size a step asks for.
#include <cstddef>
#include <cstdlib>
#include <new>

namespace mantissa::kernels {

class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { std::free(data_); }

  // At least `bytes` bytes; the contents are kept only while the size does not grow.
  void* bytes(std::size_t bytes) {
    if (bytes > capacity_) {
      std::free(data_);
      capacity_ = (bytes + 63) / 64 * 64;
      data_ = std::aligned_alloc(64, capacity_);
      if (data_ == nullptr) {
        capacity_ = 0;
        throw std::bad_alloc();
      }
    }
    return data_;
  }
  template <class T>
  T* as(std::size_t count) {
    return static_cast<T*>(bytes(count * sizeof(T)));
  }
  // How many bytes it holds now.
  std::size_t capacity() const { return capacity_; }
  // Gives the memory back; the next call allocates again.
  void release() {
    std::free(data_);
    data_ = nullptr;
    capacity_ = 0;
  }

 private:
  void* data_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace mantissa::kernels
