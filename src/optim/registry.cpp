// make_optimizer and the settings' names and checks: every optimizer is one alternative of
// OptimizerSettings, and this file turns each into its Optimizer.
#include <cmath>

#include "mantissa/error.hpp"
#include "optimizer_impl.hpp"
#include "support/number_text.hpp"

namespace mantissa::optim {
namespace {

template <class S>
concept HasWeightDecay = requires(const S& s) {
  s.weight_decay;
};
template <class S>
concept HasCheck = requires(const S& s) {
  s.check();
};
template <class S>
concept HasMaximize = requires(const S& s) {
  s.maximize;
};

template <class S>
double default_weight_decay(const S& s) {
  if constexpr (HasWeightDecay<S>) {
    return s.weight_decay;
  } else {
    return 0.0;
  }
}

template <class S>
void validate_fields(const S& s) {
  S copy = s;
  for_each_field(copy, Overloaded{
                           [](const NumberField<S>& f, double v) {
                             if (!f.range.contains(v)) {
                               throw Error(std::string(f.name) + ": " + support::value_text(v) +
                                           " must be " + f.range.describe());
                             }
                           },
                           [](const CountField<S>& f, int v) {
                             if (v < f.min) {
                               throw Error(std::string(f.name) + ": " + std::to_string(v) +
                                           " must be >= " + std::to_string(f.min));
                             }
                           },
                           [](const FlagField<S>&, bool) {},
                           [](const PairField<S>&, double, double) {},
                       });
  if constexpr (HasCheck<S>) s.check();
}

// The gradient the update reads: the parameter's, or its negation when maximizing.
template <class S>
const float* update_gradient(const S& s, const Variable& param, std::vector<float>& scratch) {
  const float* g = param.grad().f32();
  if constexpr (HasMaximize<S>) {
    if (s.maximize) {
      scratch.resize(static_cast<std::size_t>(param.grad().numel()));
      for (std::size_t i = 0; i < scratch.size(); ++i) scratch[i] = -g[i];
      return scratch.data();
    }
  }
  return g;
}

// The optimizer for settings S: each group keeps its own copy of S.
template <class S>
class TypedOptimizer final : public Optimizer {
 public:
  TypedOptimizer(const S& settings, std::vector<S> per_group, std::vector<ParamGroup> groups)
      : Optimizer(settings, std::move(groups)), per_group_(std::move(per_group)) {}

 protected:
  void update(Variable& param, std::vector<Tensor>& state, std::size_t g, double lr, double wd,
              std::int64_t step_number) override {
    const S& s = per_group_[g];
    const float* grad = update_gradient(s, param, negated_);
    detail::update(s, {param.mutable_value().f32(), grad, state, param.value().numel(), lr, wd,
                       step_number, param});
  }
  bool elementwise(std::size_t) const override { return detail::kElementwise<S>; }
  void update_range(Variable& param, std::vector<Tensor>& state, std::size_t g, double lr,
                    double wd, std::int64_t step_number, std::int64_t begin,
                    std::int64_t end) override {
    const S& s = per_group_[g];
    const float* grad = param.grad().f32() + begin;
    const std::int64_t n = end - begin;
    if constexpr (HasMaximize<S>) {
      if (s.maximize) {  // this range's gradient negated (ranges run on several threads)
        thread_local std::vector<float> negated;
        negated.resize(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) negated[i] = -grad[i];
        grad = negated.data();
      }
    }
    std::vector<Tensor> views;
    views.reserve(state.size());
    for (const Tensor& t : state)
      views.push_back(t.view(tensor::Shape{t.numel()}).slice(0, begin, end));
    detail::update(
        s, {param.mutable_value().f32() + begin, grad, views, n, lr, wd, step_number, param});
  }
  std::vector<std::string> state_names(const Variable& param, std::size_t g) const override {
    return detail::state_names(per_group_[g], param);
  }
  Tensor init_state(std::size_t index, const Variable& param, std::size_t g) const override {
    return detail::init_state(per_group_[g], index, param);
  }

 private:
  std::vector<S> per_group_;
  std::vector<float> negated_;  // the negated gradient (maximize)
};

template <class S>
std::unique_ptr<Optimizer> make_typed(const S& settings, std::vector<ParamGroup> groups) {
  std::vector<S> per_group;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    ParamGroup& group = groups[g];
    const S* own = group.settings ? std::get_if<S>(&*group.settings) : &settings;
    if (own == nullptr) {
      throw Error("optimizer " + std::string(S::kName) + ": parameter group " + std::to_string(g) +
                  " has settings of " + std::string(optimizer_name(*group.settings)));
    }
    try {
      validate_fields(*own);
    } catch (const Error& e) {
      throw Error("optimizer " + std::string(S::kName) + ": " + e.what());
    }
    per_group.push_back(*own);
    if (!group.weight_decay) group.weight_decay = constant(default_weight_decay(*own));
  }
  return std::make_unique<TypedOptimizer<S>>(settings, std::move(per_group), std::move(groups));
}

template <std::size_t... I>
std::vector<std::string_view> names_of_alternatives(std::index_sequence<I...>) {
  return {std::variant_alternative_t<I, OptimizerSettings>::kName...};
}

template <std::size_t... I>
std::optional<OptimizerSettings> defaults_named(std::string_view name, std::index_sequence<I...>) {
  std::optional<OptimizerSettings> out;
  ((std::variant_alternative_t<I, OptimizerSettings>::kName == name
        ? (void)out.emplace(std::in_place_index<I>)
        : (void)0),
   ...);
  return out;
}

constexpr auto kAlternatives = std::make_index_sequence<std::variant_size_v<OptimizerSettings>>();

}  // namespace

bool Range::contains(double v) const {
  return std::isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
}

std::string Range::describe() const {
  const bool low = std::isfinite(lo), high = std::isfinite(hi);
  if (low && high) {
    return std::string("in ") + (lo_open ? "(" : "[") + support::value_text(lo) + ", " +
           support::value_text(hi) + (hi_open ? ")" : "]");
  }
  if (low) return (lo_open ? "> " : ">= ") + support::value_text(lo);
  if (high) return (hi_open ? "< " : "<= ") + support::value_text(hi);
  return "a number";
}

void Sgd::check() const {
  if (nesterov && !(momentum > 0 && dampening == 0)) {
    throw Error("nesterov: needs momentum > 0 and dampening 0 (got momentum " +
                support::value_text(momentum) + ", dampening " + support::value_text(dampening) +
                ")");
  }
}

void Adafactor::check() const {
  if (warmup_init && !relative_step) {
    throw Error("warmup_init: needs relative_step: true (it shapes the relative step size)");
  }
}

void Rprop::check() const {
  if (step_size_min > step_size_max) {
    throw Error("step_size_min: " + support::value_text(step_size_min) +
                " must be <= step_size_max (" + support::value_text(step_size_max) + ")");
  }
}

std::string_view optimizer_name(const OptimizerSettings& settings) {
  return std::visit([](const auto& s) { return std::decay_t<decltype(s)>::kName; }, settings);
}

std::vector<std::string_view> optimizer_names() {
  return names_of_alternatives(kAlternatives);
}

std::optional<OptimizerSettings> default_settings(std::string_view name) {
  return defaults_named(name, kAlternatives);
}

double default_learning_rate(const OptimizerSettings& settings) {
  return std::visit([](const auto& s) { return std::decay_t<decltype(s)>::kLearningRate; },
                    settings);
}

bool same_settings(const OptimizerSettings& a, const OptimizerSettings& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) {
        using S = std::decay_t<decltype(x)>;
        const S& y = std::get<S>(b);
        bool same = true;
        S copy = x;  // for_each_field visits members of a mutable struct
        for_each_field(copy,
                       Overloaded{
                           [&](const NumberField<S>& f, double v) { same &= v == y.*f.member; },
                           [&](const FlagField<S>& f, bool v) { same &= v == y.*f.member; },
                           [&](const CountField<S>& f, int v) { same &= v == y.*f.member; },
                           [](const PairField<S>&, double, double) {},
                       });
        return same;
      },
      a);
}

void validate(const OptimizerSettings& settings) {
  std::visit([](const auto& s) { validate_fields(s); }, settings);
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerSettings& settings,
                                          std::vector<ParamGroup> groups) {
  return std::visit([&](const auto& s) { return make_typed(s, std::move(groups)); }, settings);
}

}  // namespace mantissa::optim

namespace mantissa::optim {

std::unique_ptr<Optimizer> make_optimizer(const OptimizerSettings& settings,
                                          std::vector<Variable> params, double learning_rate) {
  ParamGroup group;
  group.params = std::move(params);
  group.learning_rate = constant(learning_rate);
  return make_optimizer(settings, {std::move(group)});
}

}  // namespace mantissa::optim
