#pragma once
// A one-parameter SGD setup whose gradient the test scripts: finite or overflowing.
#include <limits>
#include <string>
#include <vector>

#include "mantissa/amp/grad_scaler.hpp"

namespace mantissa::testing {

struct ScriptedScaler {
  autograd::Variable p{tensor::Tensor::full({2}, 1.0f), true};
  std::unique_ptr<optim::Optimizer> opt;
  amp::GradScaler scaler;
  std::vector<std::string> logs;

  explicit ScriptedScaler(amp::GradScalerOptions o, optim::SchedulePtr lr = optim::constant(0.1))
      : scaler(with_log(std::move(o))) {
    optim::ParamGroup g;
    g.params = {p};
    g.names = {"w"};
    g.learning_rate = std::move(lr);
    opt = optim::make_optimizer(optim::Sgd{}, {g});
  }
  amp::GradScalerOptions with_log(amp::GradScalerOptions o) {
    o.log = [this](const std::string& line) { logs.push_back(line); };
    return o;
  }
  // One step whose scaled gradient is S * 0.5 (finite) or +inf in element 1 (overflow).
  bool step(bool overflow) {
    const float s = static_cast<float>(scaler.get_scale());
    const float bad = std::numeric_limits<float>::infinity();
    p.mutable_grad() = tensor::Tensor::from_vector({0.5f * s, overflow ? bad : 0.5f * s}, {2});
    scaler.unscale_(*opt);
    const bool stepped = scaler.step_if_finite(*opt);
    scaler.update();
    return stepped;
  }
};

}  // namespace mantissa::testing
