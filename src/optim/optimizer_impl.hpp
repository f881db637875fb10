#pragma once
// Internal: what each optimizer defines for its settings struct S, found by overloading:
//   void update(const S&, const UpdateArgs&);                            the update rule
//   std::vector<std::string> state_names(const S&, const Variable&);     its state tensors
//   Tensor init_state(const S&, std::size_t index, const Variable&);     (optional: zeros)
#include <cstdint>
#include <string>
#include <vector>

#include "mantissa/optim/optimizer.hpp"

namespace mantissa::optim::detail {

// One parameter's update: its values, gradient and state tensors, and this step's numbers.
struct UpdateArgs {
  float* p;
  const float* g;
  std::vector<Tensor>& state;
  std::int64_t n;
  double lr;
  double wd;
  std::int64_t step;  // 1 for the first update
  const Variable& param;
};

#define MANTISSA_OPTIMIZER_RULES(S)             \
  void update(const S& s, const UpdateArgs& a); \
  std::vector<std::string> state_names(const S& s, const Variable& param);
MANTISSA_OPTIMIZER_RULES(Sgd)
MANTISSA_OPTIMIZER_RULES(Asgd)
MANTISSA_OPTIMIZER_RULES(Adam)
MANTISSA_OPTIMIZER_RULES(AdamW)
MANTISSA_OPTIMIZER_RULES(Adamax)
MANTISSA_OPTIMIZER_RULES(NAdam)
MANTISSA_OPTIMIZER_RULES(RAdam)
MANTISSA_OPTIMIZER_RULES(Lamb)
MANTISSA_OPTIMIZER_RULES(Adagrad)
MANTISSA_OPTIMIZER_RULES(Adadelta)
MANTISSA_OPTIMIZER_RULES(RmsProp)
MANTISSA_OPTIMIZER_RULES(Rprop)
MANTISSA_OPTIMIZER_RULES(Lion)
MANTISSA_OPTIMIZER_RULES(Adafactor)
MANTISSA_OPTIMIZER_RULES(Muon)
#undef MANTISSA_OPTIMIZER_RULES

// Optimizers whose update is elementwise (Optimizer::elementwise): each element's new value
// and state depend on that element alone, and every state tensor has the parameter's shape.
template <class S>
inline constexpr bool kElementwise = false;
template <>
inline constexpr bool kElementwise<Sgd> = true;
template <>
inline constexpr bool kElementwise<Adam> = true;
template <>
inline constexpr bool kElementwise<AdamW> = true;
template <>
inline constexpr bool kElementwise<Adamax> = true;
template <>
inline constexpr bool kElementwise<RAdam> = true;
template <>
inline constexpr bool kElementwise<Adagrad> = true;
template <>
inline constexpr bool kElementwise<Adadelta> = true;
template <>
inline constexpr bool kElementwise<RmsProp> = true;
template <>
inline constexpr bool kElementwise<Rprop> = true;
template <>
inline constexpr bool kElementwise<Lion> = true;

// Optimizers whose state does not start at zero.
Tensor init_state(const Asgd& s, std::size_t index, const Variable& param);
Tensor init_state(const NAdam& s, std::size_t index, const Variable& param);
Tensor init_state(const Adagrad& s, std::size_t index, const Variable& param);
Tensor init_state(const Adafactor& s, std::size_t index, const Variable& param);
// Every other optimizer: zeros of the parameter's shape.
template <class S>
Tensor init_state(const S&, std::size_t, const Variable& param) {
  return Tensor::zeros(param.shape());
}

}  // namespace mantissa::optim::detail
