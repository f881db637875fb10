// make_optimizer: every optimizer by name, built from its Definition.
#include "mantissa/error.hpp"
#include "optimizer_impl.hpp"

namespace mantissa::optim {
namespace {

const std::vector<detail::Definition>& definitions() {
  static const std::vector<detail::Definition> all = [] {
    std::vector<detail::Definition> d;
    for (auto family : {detail::sgd_family, detail::adam_family, detail::adaptive_family,
                        detail::sign_and_factored_family}) {
      for (auto& def : family()) d.push_back(std::move(def));
    }
    return d;
  }();
  return all;
}

const detail::Definition& find(const std::string& name) {
  for (const auto& d : definitions()) {
    if (d.name == name) return d;
  }
  std::string allowed;
  for (const auto& n : optimizer_names()) allowed += (allowed.empty() ? "" : ", ") + n;
  throw Error("optimizer: unknown name '" + name + "' (expected one of: " + allowed + ")");
}

class Defined final : public Optimizer {
 public:
  Defined(const detail::Definition& def, std::vector<ParamGroup> groups)
      : Optimizer(std::move(groups), def.hyperparameters), def_(def) {}
  std::string name() const override { return def_.name; }

 protected:
  void update(Variable& param, std::vector<Tensor>& state, const ParamGroup& group, double lr,
              double wd, std::int64_t step_number) override {
    const auto h = [&](const std::string& n) { return hyper(group, n); };
    def_.update(h, param.mutable_value().f32(), param.grad().f32(), state, param.value().numel(),
                lr, wd, step_number, param);
  }
  std::vector<std::string> state_names(const Variable& param) const override {
    return def_.state_names(param);
  }
  Tensor init_state(const std::string& state_name, const Variable& param,
                    const ParamGroup& group) const override {
    if (!def_.init) return Optimizer::init_state(state_name, param, group);
    return def_.init(state_name, param, [&](const std::string& n) { return hyper(group, n); });
  }

 private:
  const detail::Definition& def_;
};

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::vector<ParamGroup> groups) {
  return std::make_unique<Defined>(find(name), std::move(groups));
}

std::vector<HyperSpec> optimizer_hyperparameters(const std::string& name) {
  return find(name).hyperparameters;
}

std::vector<std::string> optimizer_names() {
  std::vector<std::string> names;
  for (const auto& d : definitions()) names.push_back(d.name);
  return names;
}

}  // namespace mantissa::optim
