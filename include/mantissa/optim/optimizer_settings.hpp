#pragma once
// Each optimizer's hyperparameters as one typed struct with its defaults, and one field
// table per struct (name, member, allowed range) that the config parser, validation and the
// docs read. Settings are range-checked once, when an optimizer is made; the update reads
// plain members, never a name.
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
};
template <class S>
struct FlagField {
  std::string_view name;
  bool S::*member;
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
  double momentum = 0.0, dampening = 0.0, weight_decay = 0.0;
  bool nesterov = false;  // needs momentum > 0 and dampening 0
  static constexpr auto numbers() {
    return std::array{NumberField<Sgd>{"momentum", &Sgd::momentum, kNonNegative},
                      NumberField<Sgd>{"dampening", &Sgd::dampening, kUnitInterval},
                      NumberField<Sgd>{"weight_decay", &Sgd::weight_decay, kNonNegative}};
  }
  static constexpr auto flags() { return std::array{FlagField<Sgd>{"nesterov", &Sgd::nesterov}}; }
  void check() const;  // the rules between fields
};

struct Asgd {
  static constexpr std::string_view kName = "asgd";
  double lambd = 1e-4, alpha = 0.75, t0 = 1e6, weight_decay = 0.0;
  static constexpr auto numbers() {
    return std::array{NumberField<Asgd>{"lambd", &Asgd::lambd, kNonNegative},
                      NumberField<Asgd>{"alpha", &Asgd::alpha, kNonNegative},
                      NumberField<Asgd>{"t0", &Asgd::t0, kNonNegative},
                      NumberField<Asgd>{"weight_decay", &Asgd::weight_decay, kNonNegative}};
  }
  static constexpr auto flags() { return no_flags<Asgd>(); }
};

// beta1, beta2, eps, weight_decay: the fields Adam's family shares.
struct AdamCore {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
};
template <class S>
constexpr auto adam_core_numbers() {
  return std::array{NumberField<S>{"beta1", &S::beta1, kBeta},
                    NumberField<S>{"beta2", &S::beta2, kBeta},
                    NumberField<S>{"eps", &S::eps, kNonNegative},
                    NumberField<S>{"weight_decay", &S::weight_decay, kNonNegative}};
}

// Adam (L2 weight decay folded into the gradient) and AdamW (decoupled: p <- p (1 - lr wd),
// default weight_decay 0.01).
template <bool Decoupled>
struct AdamSettings : AdamCore {
  static constexpr std::string_view kName = Decoupled ? "adamw" : "adam";
  static constexpr bool kDecoupled = Decoupled;
  bool bias_correction = true;
  AdamSettings() { weight_decay = Decoupled ? 1e-2 : 0.0; }
  static constexpr auto numbers() { return adam_core_numbers<AdamSettings>(); }
  static constexpr auto flags() {
    return std::array{FlagField<AdamSettings>{"bias_correction", &AdamSettings::bias_correction}};
  }
};
using Adam = AdamSettings<false>;
using AdamW = AdamSettings<true>;

struct Adamax : AdamCore {
  static constexpr std::string_view kName = "adamax";
  static constexpr auto numbers() { return adam_core_numbers<Adamax>(); }
  static constexpr auto flags() { return no_flags<Adamax>(); }
};

struct NAdam : AdamCore {
  static constexpr std::string_view kName = "nadam";
  double momentum_decay = 4e-3;
  static constexpr auto numbers() {
    return concat(
        adam_core_numbers<NAdam>(),
        std::array{NumberField<NAdam>{"momentum_decay", &NAdam::momentum_decay, kNonNegative}});
  }
  static constexpr auto flags() { return no_flags<NAdam>(); }
};

struct RAdam : AdamCore {
  static constexpr std::string_view kName = "radam";
  static constexpr auto numbers() { return adam_core_numbers<RAdam>(); }
  static constexpr auto flags() { return no_flags<RAdam>(); }
};

// Lamb: Adam's fields with eps 1e-6.
struct Lamb : AdamCore {
  static constexpr std::string_view kName = "lamb";
  bool bias_correction = true;
  Lamb() { eps = 1e-6; }
  static constexpr auto numbers() { return adam_core_numbers<Lamb>(); }
  static constexpr auto flags() {
    return std::array{FlagField<Lamb>{"bias_correction", &Lamb::bias_correction}};
  }
};

struct Adagrad {
  static constexpr std::string_view kName = "adagrad";
  double lr_decay = 0.0, weight_decay = 0.0, initial_accumulator_value = 0.0, eps = 1e-10;
  static constexpr auto numbers() {
    using S = Adagrad;
    return std::array{
        NumberField<S>{"lr_decay", &S::lr_decay, kNonNegative},
        NumberField<S>{"weight_decay", &S::weight_decay, kNonNegative},
        NumberField<S>{"initial_accumulator_value", &S::initial_accumulator_value, kNonNegative},
        NumberField<S>{"eps", &S::eps, kNonNegative}};
  }
  static constexpr auto flags() { return no_flags<Adagrad>(); }
};

struct Adadelta {
  static constexpr std::string_view kName = "adadelta";
  double rho = 0.9, eps = 1e-6, weight_decay = 0.0;
  static constexpr auto numbers() {
    using S = Adadelta;
    return std::array{NumberField<S>{"rho", &S::rho, kUnitInterval},
                      NumberField<S>{"eps", &S::eps, kNonNegative},
                      NumberField<S>{"weight_decay", &S::weight_decay, kNonNegative}};
  }
  static constexpr auto flags() { return no_flags<Adadelta>(); }
};

struct RmsProp {
  static constexpr std::string_view kName = "rmsprop";
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
  double etaminus = 0.5, etaplus = 1.2, step_size_min = 1e-6, step_size_max = 50.0;
  static constexpr auto numbers() {
    using S = Rprop;
    return std::array{NumberField<S>{"etaminus", &S::etaminus, Range{0.0, 1.0, true, true}},
                      NumberField<S>{"etaplus", &S::etaplus, Range{1.0, kInf, true}},
                      NumberField<S>{"step_size_min", &S::step_size_min, kNonNegative},
                      NumberField<S>{"step_size_max", &S::step_size_max, kPositive}};
  }
  static constexpr auto flags() { return no_flags<Rprop>(); }
  void check() const;  // step_size_min <= step_size_max
};

struct Lion {
  static constexpr std::string_view kName = "lion";
  double beta1 = 0.9, beta2 = 0.99, weight_decay = 0.0;
  static constexpr auto numbers() {
    return std::array{NumberField<Lion>{"beta1", &Lion::beta1, kBeta},
                      NumberField<Lion>{"beta2", &Lion::beta2, kBeta},
                      NumberField<Lion>{"weight_decay", &Lion::weight_decay, kNonNegative}};
  }
  static constexpr auto flags() { return no_flags<Lion>(); }
};

struct Adafactor {
  static constexpr std::string_view kName = "adafactor";
  double eps1 = 1e-30, eps2 = 1e-3, clip_threshold = 1.0, decay_rate = -0.8, beta1 = 0.0,
         weight_decay = 0.0;
  bool scale_parameter = true;
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
    return std::array{FlagField<Adafactor>{"scale_parameter", &Adafactor::scale_parameter}};
  }
};

// Every optimizer, in the order `optimizer_names()` lists them.
using OptimizerSettings = std::variant<Sgd, Asgd, Adam, AdamW, Adamax, NAdam, RAdam, Lamb, Adagrad,
                                       Adadelta, RmsProp, Rprop, Lion, Adafactor>;

// Calls number(name, value&, range) and flag(name, value&) for each field of `s`.
template <class S, class OnNumber, class OnFlag>
void for_each_field(S& s, OnNumber&& number, OnFlag&& flag) {
  for (const auto& f : S::numbers()) number(f.name, s.*f.member, f.range);
  for (const auto& f : S::flags()) flag(f.name, s.*f.member);
}

std::string_view optimizer_name(const OptimizerSettings& settings);
std::vector<std::string_view> optimizer_names();
// The defaults of the optimizer called `name` (sgd, adam, ...); nullopt when none is.
std::optional<OptimizerSettings> default_settings(std::string_view name);
// Range and cross-field checks; mantissa::Error "<field>: <value> must be <range>".
void validate(const OptimizerSettings& settings);

}  // namespace mantissa::optim
