#pragma once
// fp8 linear layers for any training loop (the Trainer's, or a hand-written one:
// examples/fp8_loop.cpp): a delayed-scaling state (precision/fp8.hpp) attached to every
// nn::Linear of a module, updated after every optimizer step, saved in and restored from
// checkpoints ("<layer>.amax_history" [3, H] and "<layer>.scale" [3], slots in the order
// input, weight, grad; the Trainer stores them under kFp8Prefix), and their overflow and
// underflow counts summed over a window. The products take fp8 inputs while the current
// precision::Policy has fp8 enabled.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mantissa/nn/module.hpp"
#include "mantissa/precision/fp8.hpp"
#include "mantissa/tensor/tensor.hpp"

namespace mantissa::amp {

inline constexpr std::string_view kFp8Prefix = "fp8.";

class Fp8Layers {
 public:
  Fp8Layers() = default;
  // Attaches a scaling state to every Linear under `root` (nothing when fp8 is off).
  Fp8Layers(nn::Module& root, const precision::Fp8Settings& settings);

  bool empty() const { return layers_.empty(); }
  std::size_t size() const { return layers_.size(); }

  // Data parallel: replaces this process's step figures, every layer's in order (amax and
  // counts per slot, layers x 3), by the job's: the max of every process's amax (a non-finite
  // one anywhere makes it non-finite) and the sum of their counts.
  using Agreement =
      std::function<void(std::vector<float>& amax, std::vector<std::int64_t>& counts)>;

  // After an optimizer step (taken or skipped): the histories and scales move on, and the
  // step's counts join the window's. With `agree`, the step's figures are the job's first.
  void update(const Agreement& agree = {});

  // The window since the last take_window(): its totals and the slots ("<layer>.<slot>",
  // e.g. "blocks.0.attn.qkv.grad") with any overflow or underflow, in layer order; resets it.
  precision::Fp8WindowCounts take_window();
  // Every slot's counts over the whole run so far.
  std::int64_t total_overflows() const { return total_overflows_; }
  std::int64_t total_underflows() const { return total_underflows_; }

  // Checkpoint state, names without kFp8Prefix.
  std::map<std::string, tensor::Tensor> state_tensors() const;
  // Throws mantissa::Error naming the layer whose state is missing or does not fit.
  void load_state_tensors(const std::map<std::string, tensor::Tensor>& state);

 private:
  std::vector<std::pair<std::string, std::shared_ptr<precision::Fp8Meta>>> layers_;
  std::vector<precision::Fp8Meta::Counts> window_;  // per layer x slot
  std::int64_t total_overflows_ = 0, total_underflows_ = 0;
};

}  // namespace mantissa::amp
