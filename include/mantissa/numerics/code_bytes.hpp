#pragma once
// A byte array for element codes that a quantizer fills completely: resize(n) leaves the new
// bytes uninitialized (no zero pass before the quantizer's own write); assign(n, v) and the
// other value-taking calls initialize as std::vector does.
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace mantissa::numerics {

template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() noexcept = default;
  template <class U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept(noexcept(U())) {
    ::new (static_cast<void*>(p)) U;  // default-initialized: a byte keeps what the memory holds
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

using CodeBytes = std::vector<std::uint8_t, DefaultInitAllocator<std::uint8_t>>;

}  // namespace mantissa::numerics
