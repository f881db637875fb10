#pragma once
// Each optimizer's hyperparameters as one typed struct with its defaults (the vendor's,
// docs/compatibility.md), and one field table per struct that the config parser, validation
// and the docs read: numbers (name, member, allowed range, and an older spelling also
// accepted), flags, counts (integers), and pairs (one list setting two numbers: betas,
// etas, step_sizes, Adafactor's eps). Settings are range-checked once, when an optimizer is
// made; the update reads plain members, never a name.
#include <array>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace mantissa::optim {

// The values a number hyperparameter may take: an interval, each end open or closed.
struct Range {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;
  bool hi_open = false;
  bool contains(double v) const;
  std::string describe() const;  // "[0, 1)", ">= 0", "> 0", "any number"
};
inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr Range kAnyNumber{};
inline constexpr Range kNonNegative{0.0, kInf};
inline constexpr Range kPositive{0.0, kInf, true};
inline constexpr Range kBeta{0.0, 1.0, false, true};  // [0, 1)
inline constexpr Range kUnitInterval{0.0, 1.0};       // [0, 1]

template <class S>
struct NumberField {
  std::string_view name;
  double S::*member;
  Range range;
  std::string_view also = {};  // a second accepted spelling (mantissa's earlier one)
};
template <class S>
struct FlagField {
  std::string_view name;
  bool S::*member;
  std::string_view also = {};
};
template <class S>
struct CountField {
  std::string_view name;
  int S::*member;
  int min;
};
// Two number fields set together from a list [first, second] (their ranges apply).
template <class S>
struct PairField {
  std::string_view name;
  double S::*first;
  double S::*second;
};

template <class T, std::size_t N, std::size_t M>
constexpr std::array<T, N + M> concat(const std::array<T, N>& a, const std::array<T, M>& b) {
  std::array<T, N + M> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = a[i];
  for (std::size_t i = 0; i < M; ++i) out[N + i] = b[i];
  return out;
}
template <class S>
constexpr std::array<FlagField<S>, 0> no_flags() {
  return {};
}

struct Sgd {
  static constexpr std::string_view kName = "sgd";
  static constexpr double kLearningRate = 1e-3;  // the vendor requires one
  double momentum = 0.0, dampening = 0.0, weight_decay = 0.0;
  bool nesterov = false;  // needs momentum > 0 and dampening 0
  bool maximize = false;
  static constexpr auto numbers() {
    return std::array{NumberField<Sgd>{"momentum", &Sgd::momentum, kNonNegative},
                      NumberField<Sgd>{"dampening", &Sgd::dampening, kUnitInterval},
                      NumberField<Sgd>{"weight_decay", &Sgd::weight_decay, kNonNegative}};
  }
  static constexpr auto flags() {
    return std::array{FlagField<Sgd>{"nesterov", &Sgd::nesterov},
                      FlagField<Sgd>{"maximize", &Sgd::maximize}};
  }
  void check() const;  // the rules between fields
};

struct Asgd {
  static constexpr std::string_view kName = "asgd";
  static constexpr double kLearningRate = 1e-2;
  double lambd = 1e-4, alpha = 0.75, t0 = 1e6, weight_decay = 0.0;
  bool maximize = false;
  static constexpr auto numbers() {
    return std::array{NumberField<Asgd>{"lambd", &Asgd::lambd, kNonNegative},
                      NumberField<Asgd>{"alpha", &Asgd::alpha, kNonNegative},
                      NumberField<Asgd>{"t0", &Asgd::t0, kNonNegative},
                      NumberField<Asgd>{"weight_decay", &Asgd::weight_decay, kNonNegative}};
  }
  static constexpr auto flags() { return std::array{FlagField<Asgd>{"maximize", &Asgd::maximize}}; }
};

// beta1, beta2, eps, weight_decay: the fields Adam's family shares (`betas` sets both betas).
struct AdamCore {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-6, weight_decay = 0.0;
};
template <class S>
constexpr auto adam_core_numbers() {
  return std::array{NumberField<S>{"beta1", &S::beta1, kBeta},
                    NumberField<S>{"beta2", &S::beta2, kBeta},
                    NumberField<S>{"eps", &S::eps, kNonNegative},
                    NumberField<S>{"weight_decay", &S::weight_decay, kNonNegative}};
}
template <class S>
constexpr auto betas_pair() {
  return std::array{PairField<S>{"betas", &S::beta1, &S::beta2}};
}

// Adam (L2 weight decay folded into the gradient) and AdamW (decoupled: p <- p (1 - lr wd)).
// The vendor's defaults: eps 1e-6, weight_decay 0.
template <bool Decoupled>
struct AdamSettings : AdamCore {
  static constexpr std::string_view kName = Decoupled ? "adamw" : "adam";
  static constexpr double kLearningRate = 1e-3;
  static constexpr bool kDecoupled = Decoupled;
  bool bias_correction = true;  // `correct_bias`
  bool amsgrad = false;         // divide by the running maximum of v (PyTorch's AMSGrad)
  static constexpr auto numbers() { return adam_core_numbers<AdamSettings>(); }
  static constexpr auto flags() {
    using S = AdamSettings;
    return std::array{FlagField<S>{"correct_bias", &S::bias_correction, "bias_correction"},
                      FlagField<S>{"amsgrad", &S::amsgrad}};
  }
  static constexpr auto pairs() { return betas_pair<AdamSettings>(); }
};
using Adam = AdamSettings<false>;
using AdamW = AdamSettings<true>;

struct Adamax : AdamCore {
  static constexpr std::string_view kName = "adamax";
  static constexpr double kLearningRate = 1e-3;
  bool maximize = false;
  static constexpr auto numbers() { return adam_core_numbers<Adamax>(); }
  static constexpr auto flags() {
    return std::array{FlagField<Adamax>{"maximize", &Adamax::maximize}};
  }
  static constexpr auto pairs() { return betas_pair<Adamax>(); }
};

struct NAdam : AdamCore {
  static constexpr std::string_view kName = "nadam";
  static constexpr double kLearningRate = 2e-3;
  double momentum_decay = 4e-3;
  NAdam() { eps = 1e-8; }
  static constexpr auto numbers() {
    return concat(
        adam_core_numbers<NAdam>(),
        std::array{NumberField<NAdam>{"momentum_decay", &NAdam::momentum_decay, kNonNegative}});
  }
  static constexpr auto flags() { return no_flags<NAdam>(); }
  static constexpr auto pairs() { return betas_pair<NAdam>(); }
};

struct RAdam : AdamCore {
  static constexpr std::string_view kName = "radam";
  static constexpr double kLearningRate = 1e-3;
  static constexpr auto numbers() { return adam_core_numbers<RAdam>(); }
  static constexpr auto flags() { return no_flags<RAdam>(); }
  static constexpr auto pairs() { return betas_pair<RAdam>(); }
};

// Lamb as the vendor has it: no bias correction by default, the trust ratio
// min(||p||, 10) / ||update|| (1 when either norm is 0), and `adam` (trust ratio 1).
struct Lamb : AdamCore {
  static constexpr std::string_view kName = "lamb";
  static constexpr double kLearningRate = 1e-3;
  bool bias_correction = false;
  bool adam = false;
  static constexpr auto numbers() { return adam_core_numbers<Lamb>(); }
  static constexpr auto flags() {
    return std::array{FlagField<Lamb>{"bias_correction", &Lamb::bias_correction, "correct_bias"},
                      FlagField<Lamb>{"adam", &Lamb::adam}};
  }
  static constexpr auto pairs() { return betas_pair<Lamb>(); }
};

struct Adagrad {
  static constexpr std::string_view kName = "adagrad";
  static constexpr double kLearningRate = 1e-2;
  double lr_decay = 0.0, weight_decay = 0.0, initial_accumulator_value = 0.0, eps = 1e-6;
  bool maximize = false;
  static constexpr auto numbers() {
    using S = Adagrad;
    return std::array{
        NumberField<S>{"lr_decay", &S::lr_decay, kNonNegative},
        NumberField<S>{"weight_decay", &S::weight_decay, kNonNegative},
        NumberField<S>{"initial_accumulator_value", &S::initial_accumulator_value, kNonNegative},
        NumberField<S>{"eps", &S::eps, kNonNegative}};
  }
  static constexpr auto flags() {
    return std::array{FlagField<Adagrad>{"maximize", &Adagrad::maximize}};
  }
};

struct Adadelta {
  static constexpr std::string_view kName = "adadelta";
  static constexpr double kLearningRate = 1.0;
  double rho = 0.9, eps = 1e-6, weight_decay = 0.0;
  bool maximize = false;
  static constexpr auto numbers() {
    using S = Adadelta;
    return std::array{NumberField<S>{"rho", &S::rho, kUnitInterval},
                      NumberField<S>{"eps", &S::eps, kNonNegative},
                      NumberField<S>{"weight_decay", &S::weight_decay, kNonNegative}};
  }
  static constexpr auto flags() {
    return std::array{FlagField<Adadelta>{"maximize", &Adadelta::maximize}};
  }
};

struct RmsProp {
  static constexpr std::string_view kName = "rmsprop";
  static constexpr double kLearningRate = 1e-2;
  double alpha = 0.99, eps = 1e-8, weight_decay = 0.0, momentum = 0.0;
  bool centered = false;
  static constexpr auto numbers() {
    using S = RmsProp;
    return std::array{NumberField<S>{"alpha", &S::alpha, kNonNegative},
                      NumberField<S>{"eps", &S::eps, kNonNegative},
                      NumberField<S>{"weight_decay", &S::weight_decay, kNonNegative},
                      NumberField<S>{"momentum", &S::momentum, kNonNegative}};
  }
  static constexpr auto flags() {
    return std::array{FlagField<RmsProp>{"centered", &RmsProp::centered}};
  }
};

struct Rprop {
  static constexpr std::string_view kName = "rprop";
  static constexpr double kLearningRate = 1e-3;
  double etaminus = 0.5, etaplus = 1.2, step_size_min = 1e-6, step_size_max = 50.0;
  static constexpr auto numbers() {
    using S = Rprop;
    return std::array{NumberField<S>{"etaminus", &S::etaminus, Range{0.0, 1.0, true, true}},
                      NumberField<S>{"etaplus", &S::etaplus, Range{1.0, kInf, true}},
                      NumberField<S>{"step_size_min", &S::step_size_min, kNonNegative},
                      NumberField<S>{"step_size_max", &S::step_size_max, kPositive}};
  }
  static constexpr auto flags() { return no_flags<Rprop>(); }
  static constexpr auto pairs() {
    using S = Rprop;
    return std::array{PairField<S>{"etas", &S::etaminus, &S::etaplus},
                      PairField<S>{"step_sizes", &S::step_size_min, &S::step_size_max}};
  }
  void check() const;  // step_size_min <= step_size_max
};

struct Lion {
  static constexpr std::string_view kName = "lion";
  static constexpr double kLearningRate = 1e-4;
  double beta1 = 0.9, beta2 = 0.99, weight_decay = 0.0;
  static constexpr auto numbers() {
    return std::array{NumberField<Lion>{"beta1", &Lion::beta1, kBeta},
                      NumberField<Lion>{"beta2", &Lion::beta2, kBeta},
                      NumberField<Lion>{"weight_decay", &Lion::weight_decay, kNonNegative}};
  }
  static constexpr auto flags() { return no_flags<Lion>(); }
  static constexpr auto pairs() { return betas_pair<Lion>(); }
};

// Adafactor (`eps` sets eps1, eps2). relative_step: the step size is min(1e-2, 1/sqrt(t))
// (warmup_init: min(1e-6 t, 1/sqrt(t))) instead of the learning-rate schedule's value.
struct Adafactor {
  static constexpr std::string_view kName = "adafactor";
  static constexpr double kLearningRate = 1e-3;  // the vendor requires one (or relative_step)
  double eps1 = 1e-30, eps2 = 1e-3, clip_threshold = 1.0, decay_rate = -0.8, beta1 = 0.0,
         weight_decay = 0.0;
  bool scale_parameter = true;
  bool relative_step = false;
  bool warmup_init = false;  // needs relative_step
  static constexpr auto numbers() {
    using S = Adafactor;
    return std::array{NumberField<S>{"eps1", &S::eps1, kNonNegative},
                      NumberField<S>{"eps2", &S::eps2, kNonNegative},
                      NumberField<S>{"clip_threshold", &S::clip_threshold, kPositive},
                      NumberField<S>{"decay_rate", &S::decay_rate, Range{-kInf, 0.0}},
                      NumberField<S>{"beta1", &S::beta1, kBeta},
                      NumberField<S>{"weight_decay", &S::weight_decay, kNonNegative}};
  }
  static constexpr auto flags() {
    using S = Adafactor;
    return std::array{FlagField<S>{"scale_parameter", &S::scale_parameter},
                      FlagField<S>{"relative_step", &S::relative_step},
                      FlagField<S>{"warmup_init", &S::warmup_init}};
  }
  static constexpr auto pairs() {
    return std::array{PairField<Adafactor>{"eps", &Adafactor::eps1, &Adafactor::eps2}};
  }
  void check() const;  // warmup_init needs relative_step
};

// Muon (PyTorch's torch.optim.Muon, with the vendor's defaults): momentum, then the update
// of each matrix orthogonalized by ns_steps Newton-Schulz iterations and scaled by
// sqrt(max(1, rows / cols)); decoupled weight decay. Parameters with fewer than 2 dimensions
// take the momentum update as it is.
struct Muon {
  static constexpr std::string_view kName = "muon";
  static constexpr double kLearningRate = 0.02;
  double momentum = 0.95, weight_decay = 0.01;
  bool nesterov = true;
  int ns_steps = 5;
  static constexpr auto numbers() {
    return std::array{NumberField<Muon>{"momentum", &Muon::momentum, kBeta},
                      NumberField<Muon>{"weight_decay", &Muon::weight_decay, kNonNegative}};
  }
  static constexpr auto flags() { return std::array{FlagField<Muon>{"nesterov", &Muon::nesterov}}; }
  static constexpr auto counts() {
    return std::array{CountField<Muon>{"ns_steps", &Muon::ns_steps, 1}};
  }
};

// Every optimizer, in the order `optimizer_names()` lists them.
using OptimizerSettings = std::variant<Sgd, Asgd, Adam, AdamW, Adamax, NAdam, RAdam, Lamb, Adagrad,
                                       Adadelta, RmsProp, Rprop, Lion, Adafactor, Muon>;

template <class S>
concept HasCounts = requires {
  S::counts();
};
template <class S>
concept HasPairs = requires {
  S::pairs();
};

// Calls visit(field, value&) for each number, flag and count field of `s`, and
// visit(pair_field, first&, second&) for each pair.
template <class S, class Visitor>
void for_each_field(S& s, Visitor&& visit) {
  for (const auto& f : S::numbers()) visit(f, s.*f.member);
  for (const auto& f : S::flags()) visit(f, s.*f.member);
  if constexpr (HasCounts<S>) {
    for (const auto& f : S::counts()) visit(f, s.*f.member);
  }
  if constexpr (HasPairs<S>) {
    for (const auto& f : S::pairs()) visit(f, s.*f.first, s.*f.second);
  }
}

// The name of the number field of S at `member` (pairs name their two numbers by it).
template <class S>
constexpr std::string_view number_name(double S::*member) {
  for (const auto& f : S::numbers()) {
    if (f.member == member) return f.name;
  }
  return "?";
}

// Overloaded lambdas, for visitors.
template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

std::string_view optimizer_name(const OptimizerSettings& settings);
std::vector<std::string_view> optimizer_names();
// The defaults of the optimizer called `name` (sgd, adam, ...); nullopt when none is.
std::optional<OptimizerSettings> default_settings(std::string_view name);
// The vendor's default learning rate of these settings' optimizer.
double default_learning_rate(const OptimizerSettings& settings);
// Range and cross-field checks; mantissa::Error "<field>: <value> must be <range>".
void validate(const OptimizerSettings& settings);
// The same optimizer with every field equal.
bool same_settings(const OptimizerSettings& a, const OptimizerSettings& b);

}  // namespace mantissa::optim
