#pragma once
// Module: parameters and child modules under hierarchical names ("blocks.0.attn.qkv.weight"),
// train/eval mode, and named state in and out. Parameters are float32 leaves; ops cast them
// to the policy's half format at use (once per optimizer step).
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mantissa/autograd/variable.hpp"
#include "mantissa/error.hpp"

namespace mantissa::nn {

using autograd::Variable;
using tensor::Shape;
using tensor::Tensor;

class Module {
 public:
  virtual ~Module() = default;

  // Every parameter with its full name, in registration order (depth first).
  std::vector<std::pair<std::string, Variable>> named_parameters() const;
  std::vector<Variable> parameters() const;
  std::int64_t parameter_count() const;

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // fn(name, module) for this module ("") and every module under it, depth first, in
  // registration order (names like "blocks.0.fc").
  void for_each_module(const std::function<void(const std::string&, Module&)>& fn);

  // Gives every module under this one its name ("blocks.0.fc") as the layer its forward's ops
  // run in (precision::LayerScope): what "which layer loses what" and the overflow attribution
  // name. This module itself (the root) gets none. The models call it when built; a module
  // built by hand calls it once its children are registered.
  void name_layers();
  // The layer name name_layers() gave this module (null before, and for the root).
  const precision::LayerName& layer_name() const { return layer_; }

  std::map<std::string, Tensor> state_dict() const;
  // Copies values into the parameters. Every parameter must be present with its shape
  // (else mantissa::Error naming the key); extra keys are errors too.
  void load_state_dict(const std::map<std::string, Tensor>& state);

 protected:
  Variable register_parameter(const std::string& name, Tensor value);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    if (m == nullptr) throw Error("register_module: module '" + name + "' is null");
    children_.emplace_back(name, m);
    return m;
  }

 private:
  void collect(const std::string& prefix, std::vector<std::pair<std::string, Variable>>& out) const;
  void visit(const std::string& name, const std::function<void(const std::string&, Module&)>& fn);
  std::vector<std::pair<std::string, Variable>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
  precision::LayerName layer_;
};

}  // namespace mantissa::nn
