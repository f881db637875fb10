#pragma once
// Where a backward first went non-finite. Once an inf or NaN appears in a gradient, it spreads
// backward through every op before the one that made it, so by the end of the backward every
// parameter's gradient holds one and naming them says nothing about the cause. While a
// NonfiniteWatch is alive on a thread, backward() checks each gradient an op makes for another
// op (and each output gradient it rounds to H on arrival) for inf and NaN
// (kernels::any_nonfinite, a pass over bit patterns), in backward order, until the first one
// is found: first() then names that op and its layer. After the first find the checks stop,
// so a step that overflows costs less than one that does not.
#include <cstdint>
#include <optional>
#include <string>

#include "mantissa/names.hpp"

namespace mantissa::autograd {

// Which gradient of the op went non-finite.
enum class NonfiniteGradient : std::uint8_t {
  input_grad,   // one its backward made for an input
  output_grad,  // its output gradient, when rounded to H on arrival (a float32 sum that
                // overflowed H)
};
inline constexpr NameTable<NonfiniteGradient, 2> kNonfiniteGradientNames = {{
    {"input_grad", NonfiniteGradient::input_grad},
    {"output_grad", NonfiniteGradient::output_grad},
}};
static_assert(in_enum_order(kNonfiniteGradientNames,
                            static_cast<std::size_t>(NonfiniteGradient::output_grad) + 1));

struct NonfiniteOrigin {
  std::string op;     // the node's name(): "linear", "causal_attention", "add"
  std::string layer;  // the layer it ran in ("blocks.3.fc"); "" outside every named module
  NonfiniteGradient gradient = NonfiniteGradient::input_grad;
  bool operator==(const NonfiniteOrigin&) const = default;
};

// "the backward of linear in blocks.3.fc" / "the output gradient of add in blocks.3, rounded
// to the half format" (ops outside every named module: "at the model's top level").
std::string describe(const NonfiniteOrigin& origin);

class NonfiniteWatch {
 public:
  NonfiniteWatch();
  ~NonfiniteWatch();
  NonfiniteWatch(const NonfiniteWatch&) = delete;
  NonfiniteWatch& operator=(const NonfiniteWatch&) = delete;

  // The first op, in backward order, of the backwards run since construction or reset().
  const std::optional<NonfiniteOrigin>& first() const { return first_; }
  void reset() { first_.reset(); }

  // Bytes of gradients the checks have read since construction (what the watch costs).
  std::int64_t bytes_read() const { return bytes_read_; }

  // The watch alive on this thread (the innermost), or nullptr. For backward().
  static NonfiniteWatch* active();
  // Keeps the first origin only.
  void found(NonfiniteOrigin origin);
  void count_read(std::int64_t bytes) { bytes_read_ += bytes; }

 private:
  std::optional<NonfiniteOrigin> first_;
  std::int64_t bytes_read_ = 0;
  NonfiniteWatch* previous_;
};

}  // namespace mantissa::autograd
