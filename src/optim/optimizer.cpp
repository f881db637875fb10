#include "mantissa/optim/optimizer.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "mantissa/error.hpp"
#include "mantissa/kernels/grad_reductions.hpp"
#include "mantissa/numerics/convert.hpp"
#include "optimizer_checks.hpp"

namespace mantissa::optim {
namespace {

using numerics::Format;

// A moment-like state tensor (one value per parameter element) is kept in the state format;
// scalars and factored statistics stay float32.
bool per_element(const Tensor& state, const Variable& p) {
  return state.numel() == p.value().numel() && state.numel() > 1;
}

Tensor in_format(const Tensor& t, Format f) {
  return t.format() == f ? t : t.to(f);
}

// float32 values into t (contiguous, any format), with `options`' rounding.
void store(Tensor& t, const Tensor& values, const numerics::ConvertOptions& options = {}) {
  if (t.format() == Format::float32) {
    if (!values.shares_storage(t)) t.copy_from(values);
    return;
  }
  numerics::encode_array(values.f32(), static_cast<std::size_t>(values.numel()), t.format(),
                         t.raw_data(), options);
}

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Every value finite (any format): the sum of the squares (in double, over all threads) is
// finite exactly when every value is, since a finite float squared stays far inside double's
// range.
bool all_finite(const Tensor& t) {
  const Tensor f = in_format(t, Format::float32);
  return std::isfinite(kernels::sum_squares(f.f32(), f.numel()));
}

// `src`'s values into `dst`, reusing dst's storage when it has src's shape and format (a
// step's snapshot is taken every step: no allocation once the buffers exist).
void copy_into(Tensor& dst, const Tensor& src) {
  if (dst.defined() && dst.shape() == src.shape() && dst.format() == src.format()) {
    dst.copy_from(src);
  } else {
    dst = src.clone();
  }
}

// dst with src's shape and format (its storage reused when it has them), values not copied.
void reserve_like(Tensor& dst, const Tensor& src) {
  if (!dst.defined() || dst.shape() != src.shape() || dst.format() != src.format()) {
    dst = Tensor::empty(src.shape(), src.format());
  }
}

// Elements [b, e) of float32 tensors (contiguous): from `src` into `dst`, with streaming
// stores: the copy is read back only if the step is refused, so it goes to memory without
// first reading its cache lines (a plain copy would read them: a third more traffic), and
// leaves the cache to the values the update reads next.
void copy_range(Tensor& dst, const Tensor& src, std::int64_t b, std::int64_t e) {
  float* out = dst.f32();
  const float* in = src.f32();
  std::int64_t i = b;
  for (; i < e && reinterpret_cast<std::uintptr_t>(out + i) % 32 != 0; ++i) out[i] = in[i];
  for (; i + 8 <= e; i += 8) _mm256_stream_ps(out + i, _mm256_loadu_ps(in + i));
  for (; i < e; ++i) out[i] = in[i];
  _mm_sfence();
}

// Every one of x[b, e) finite: x - x is 0 for a finite x and NaN for inf or NaN, so one
// unordered compare per 8 lanes finds them (the whole library is built for AVX2).
bool finite_range(const float* x, std::int64_t b, std::int64_t e) {
  __m256 bad = _mm256_setzero_ps();
  std::int64_t i = b;
  for (; i + 8 <= e; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(_mm256_sub_ps(v, v), _mm256_setzero_ps(), _CMP_UNORD_Q));
  }
  bool finite = _mm256_testz_ps(bad, bad) != 0;
  for (; i < e; ++i) finite = finite && std::isfinite(x[i]);
  return finite;
}

}  // namespace

// The weights, state and compensation buffers a step may change, copied before it, so a
// refused update puts them back exactly (a parameter's first step creates its state: a
// refused first step removes it again). Kept by the optimizer, its buffers are reused.
class Optimizer::UpdateSnapshot {
 public:
  // A new step: nothing taken yet.
  void begin() { used_ = 0; }
  // p's values, state and compensation as they are before its update.
  template <class State, class Kahan>
  void take(Variable& p, const State& state, const Kahan& kahan) {
    if (used_ == saved_.size()) saved_.emplace_back();
    Saved& s = saved_[used_++];
    s.param = p;
    copy_into(s.value, p.value());
    const auto it = state.find(p.id());
    s.had_state = it != state.end();
    if (s.had_state) {
      s.state.resize(it->second.size());
      for (std::size_t k = 0; k < it->second.size(); ++k) copy_into(s.state[k], it->second[k]);
    }
    const auto c = kahan.find(p.id());
    s.had_kahan = c != kahan.end();
    if (s.had_kahan) copy_into(s.kahan, c->second);
  }
  // p's buffers as take() makes them, their values not copied yet: the caller copies ranges
  // into them (copy_ranges) before it changes those ranges. No Kahan buffer (float32 only).
  template <class State>
  void reserve(Variable& p, const State& state) {
    if (used_ == saved_.size()) saved_.emplace_back();
    Saved& s = saved_[used_++];
    s.param = p;
    reserve_like(s.value, p.value());
    const auto it = state.find(p.id());
    s.had_state = it != state.end();
    if (s.had_state) {
      s.state.resize(it->second.size());
      for (std::size_t k = 0; k < it->second.size(); ++k) reserve_like(s.state[k], it->second[k]);
    }
    s.had_kahan = false;
  }
  // Elements [b, e) of the last reserved parameter's values and state into its buffers.
  void copy_ranges(const std::vector<Tensor>& state, std::int64_t b, std::int64_t e) {
    Saved& s = saved_[used_ - 1];
    copy_range(s.value, s.param.value(), b, e);
    if (!s.had_state) return;
    for (std::size_t k = 0; k < s.state.size(); ++k) copy_range(s.state[k], state[k], b, e);
  }
  // Every parameter taken since begin() back as it was.
  template <class State, class Kahan>
  void restore(State& state, Kahan& kahan) {
    for (std::size_t i = 0; i < used_; ++i) {
      Saved& s = saved_[i];
      s.param.mutable_value().copy_from(s.value);
      s.param.bump_version();
      // In place: whoever holds the state tensors sees them restored.
      if (s.had_state) {
        std::vector<Tensor>& now = state[s.param.id()];
        for (std::size_t k = 0; k < now.size() && k < s.state.size(); ++k)
          now[k].copy_from(s.state[k]);
      } else {
        state.erase(s.param.id());
      }
      if (s.had_kahan) {
        kahan[s.param.id()].copy_from(s.kahan);
      } else {
        kahan.erase(s.param.id());
      }
    }
  }

 private:
  struct Saved {
    Variable param;
    Tensor value;
    bool had_state = false, had_kahan = false;
    std::vector<Tensor> state;
    Tensor kahan;
  };
  std::vector<Saved> saved_;
  std::size_t used_ = 0;
};

void TrainingState::validate() const {
  if (state_format != Format::float32 && state_format != Format::bfloat16) {
    throw Error("optimizer.state_dtype: '" + std::string(numerics::name(state_format)) +
                "' (expected one of: float32, bfloat16)");
  }
}

std::string parameter_name(const ParamGroup& group, std::size_t g, std::size_t i) {
  return group.names.empty() ? "group" + std::to_string(g) + ".param" + std::to_string(i)
                             : group.names[i];
}

Optimizer::Optimizer(OptimizerSettings settings, std::vector<ParamGroup> groups)
    : settings_(std::move(settings)), groups_(std::move(groups)) {
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const ParamGroup& group = groups_[g];
    if (!group.learning_rate) {
      throw Error("optimizer: parameter group " + std::to_string(g) + " has no learning rate");
    }
    if (!group.names.empty() && group.names.size() != group.params.size()) {
      throw Error("optimizer: parameter group " + std::to_string(g) + " has " +
                  std::to_string(group.names.size()) + " names for " +
                  std::to_string(group.params.size()) + " parameters");
    }
  }
  detail::check_parameter_list(groups_);
}

std::vector<Tensor>& Optimizer::state_for(Variable& p, std::size_t g) {
  auto& s = state_[p.id()];
  if (s.empty()) {
    const std::size_t n = state_names(p, g).size();
    for (std::size_t k = 0; k < n; ++k) {
      const Tensor t = init_state(k, p, g);
      s.push_back(per_element(t, p) ? in_format(t, training_.state_format) : t);
    }
  }
  return s;
}

void Optimizer::check_values(std::size_t g, std::int64_t k) const {
  const ParamGroup& group = groups_[g];
  for (const auto& [what, schedule] : {std::pair{"learning rate", group.learning_rate.get()},
                                       std::pair{"weight decay", group.weight_decay.get()}}) {
    if (schedule == nullptr) continue;
    const double v = schedule->value(k);
    if (!(std::isfinite(v) && v >= 0)) {
      std::ostringstream text;
      text << v;
      throw Error("optimizer " + name() + ": the " + what + " of parameter group " +
                  std::to_string(g) + " at step " + std::to_string(k) + " is " + text.str() + " (" +
                  schedule->describe() + "); it must be a finite number >= 0");
    }
  }
}

void Optimizer::set_training_state(const TrainingState& t) {
  t.validate();
  training_ = t;
  const Format wf = t.weight_format();
  for (ParamGroup& group : groups_) {
    for (Variable& p : group.params) {
      if (p.value().format() != wf) {
        p.mutable_value() = p.value().to(wf);
        p.bump_version();
      }
      if (p.grad().defined() && p.grad().format() != wf) p.mutable_grad() = p.grad().to(wf);
    }
  }
  for (ParamGroup& group : groups_) {
    for (Variable& p : group.params) {
      auto it = state_.find(p.id());
      if (it == state_.end()) continue;
      for (Tensor& st : it->second) {
        if (per_element(st, p)) st = in_format(st, t.state_format);
      }
    }
  }
}

void Optimizer::check_schedules(std::int64_t steps) const {
  constexpr std::int64_t kMostChecked = 100000;  // beyond that, evenly spaced steps
  const std::int64_t stride = std::max<std::int64_t>(1, steps / kMostChecked);
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    // k advances while it stays below steps, never past INT64_MAX (steps near it).
    for (std::int64_t k = step_; k<steps; k = k> steps - stride ? steps : k + stride) {
      check_values(g, k);
    }
    if (steps > step_) check_values(g, steps - 1);
  }
}

std::int64_t Optimizer::state_bytes() const {
  std::int64_t bytes = 0;
  for (const auto& [key, tensors] : state_) {
    for (const Tensor& t : tensors) bytes += t.numel() * t.element_bytes();
  }
  for (const auto& [key, t] : kahan_) bytes += t.numel() * t.element_bytes();
  return bytes;
}

void Optimizer::staged_update(Variable& p, std::vector<Tensor>& s, std::size_t g, double lr,
                              double wd, std::int64_t index) {
  // float32 copies (or the tensors themselves where they are float32 already).
  Tensor w = p.value().format() == Format::float32 ? p.value() : p.value().to(Format::float32);
  const Tensor before =
      training_.master_weights == MasterWeights::bfloat16_kahan ? w.clone() : Tensor();
  Variable work(w, true);
  work.mutable_grad() = in_format(p.grad(), Format::float32);
  std::vector<Tensor> s32;
  for (const Tensor& t : s) s32.push_back(in_format(t, Format::float32));
  if (elementwise(g) && work.value().is_contiguous() && work.grad().is_contiguous()) {
    update_in_ranges(work, s32, g, lr, wd, step_ + 1, false);
  } else {
    update(work, s32, g, lr, wd, step_ + 1);
  }
  for (std::size_t i = 0; i < s.size(); ++i) store(s[i], s32[i]);
  Tensor& value = p.mutable_value();
  switch (training_.master_weights) {
    case MasterWeights::float32:
      break;  // updated in place
    case MasterWeights::bfloat16:
      store(value, w);
      break;
    case MasterWeights::bfloat16_stochastic: {
      numerics::ConvertOptions o;
      o.rounding = numerics::Rounding::stochastic;
      o.seed = mix(training_.seed ^ mix(static_cast<std::uint64_t>(step_)) ^
                   mix(static_cast<std::uint64_t>(index) << 32));
      store(value, w, o);
      break;
    }
    case MasterWeights::bfloat16_kahan: {
      // sum = old + (update + c); w' = bf16(sum); c' = bf16(sum - w'): the rounding error
      // goes into the next update instead of being lost.
      Tensor& c = kahan_[p.id()];
      if (!c.defined()) c = Tensor::zeros(value.shape(), Format::bfloat16);
      const Tensor c32 = c.to(Format::float32);
      float* sum = w.f32();
      const float *old = before.f32(), *comp = c32.f32();
      const std::int64_t n = w.numel();
      for (std::int64_t i = 0; i < n; ++i) sum[i] = old[i] + ((sum[i] - old[i]) + comp[i]);
      store(value, w);
      const Tensor rounded = value.to(Format::float32);
      const float* r = rounded.f32();
      for (std::int64_t i = 0; i < n; ++i) sum[i] -= r[i];
      store(c, w);
      break;
    }
  }
}

bool Optimizer::step(NonFiniteUpdate on_nonfinite) {
  // Every group's values and every gradient's shape are checked before any parameter moves:
  // no half-applied step.
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    check_values(g, step_);
    for (std::size_t i = 0; i < groups_[g].params.size(); ++i) {
      const Variable& p = groups_[g].params[i];
      const Tensor& grad = p.grad();
      if (grad.defined() && !(grad.shape() == p.shape())) {
        throw Error("optimizer " + name() + ": the gradient of '" +
                    parameter_name(groups_[g], g, i) + "' has shape " + grad.shape().to_string() +
                    ", the parameter " + p.shape().to_string());
      }
    }
  }
  refused_.clear();
  // Guarded, each parameter is copied just before its update and checked just after it,
  // while its values are still in cache; the first non-finite one puts back every parameter
  // updated so far.
  const bool guarded = on_nonfinite == NonFiniteUpdate::refuse;
  if (guarded) {
    if (!snapshot_) snapshot_ = std::make_shared<UpdateSnapshot>();
    snapshot_->begin();
  }
  std::int64_t index = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    ParamGroup& group = groups_[g];
    const double lr = group.learning_rate->value(step_);
    const double wd = group.weight_decay->value(step_);
    for (std::size_t j = 0; j < group.params.size(); ++j) {
      Variable& p = group.params[j];
      const std::int64_t i = index++;
      if (!p.grad().defined()) continue;
      const bool plain = p.value().format() == Format::float32 &&
                         p.grad().format() == Format::float32 &&
                         training_.state_format == Format::float32;
      if (plain && elementwise(g) && p.value().is_contiguous() && p.grad().is_contiguous()) {
        if (guarded) snapshot_->reserve(p, state_);
        std::vector<Tensor>& s = state_for(p, g);
        const bool copy = p.holds_current_copy();
        const bool finite = update_in_ranges(p, s, g, lr, wd, step_ + 1, guarded);
        p.bump_version(/*copy_refreshed=*/copy);
        if (!finite) {
          refused_ = nonfinite_tensor(g, j);
          snapshot_->restore(state_, kahan_);
          return false;
        }
        continue;
      }
      if (guarded) snapshot_->take(p, state_, kahan_);
      std::vector<Tensor>& s = state_for(p, g);
      if (plain) {
        update(p, s, g, lr, wd, step_ + 1);
      } else {
        staged_update(p, s, g, lr, wd, i);
      }
      p.bump_version();
      if (guarded) {
        refused_ = nonfinite_tensor(g, j);
        if (!refused_.empty()) {
          snapshot_->restore(state_, kahan_);
          return false;
        }
      }
    }
  }
  ++step_;
  return true;
}

bool Optimizer::elementwise(std::size_t) const {
  return false;
}

void Optimizer::update_range(Variable&, std::vector<Tensor>&, std::size_t, double, double,
                             std::int64_t, std::int64_t, std::int64_t) {
  throw Error("Optimizer::update_range: this optimizer's update is not elementwise");
}

bool Optimizer::update_in_ranges(Variable& p, std::vector<Tensor>& s, std::size_t g, double lr,
                                 double wd, std::int64_t step_number, bool guarded) {
  // Ranges of 32 Ki elements: a range of the values, the state, their copies and the gradient
  // (under 1 MiB for three state tensors) stay in a core's cache from copy to check. The
  // update kernels have no threads of their own: each range runs on one thread.
  constexpr std::int64_t kRange = std::int64_t{1} << 15;
  const std::int64_t n = p.value().numel();
  const std::int64_t ranges = (n + kRange - 1) / kRange;
  int finite = 1;
  // A weight's H copy (a bfloat16 run's) rounded range by range while the new values are in
  // cache, instead of again from memory by the next forward.
  const bool copy = p.holds_current_copy();
#pragma omp parallel for schedule(static) reduction(& : finite) if (ranges > 1)
  for (std::int64_t r = 0; r < ranges; ++r) {
    const std::int64_t b = r * kRange, e = std::min(n, b + kRange);
    if (guarded) snapshot_->copy_ranges(s, b, e);
    update_range(p, s, g, lr, wd, step_number, b, e);
    if (copy) p.refresh_copy_range(b, e);
    if (!guarded) continue;
    bool ok = finite_range(p.value().f32(), b, e);
    for (const Tensor& t : s) ok = ok && finite_range(t.f32(), b, e);
    finite &= ok ? 1 : 0;
  }
  return finite != 0;
}

std::string Optimizer::nonfinite_tensor(std::size_t g, std::size_t i) {
  Variable& p = groups_[g].params[i];
  const std::string pname = parameter_name(groups_[g], g, i);
  if (!all_finite(p.value())) return pname;
  const auto it = state_.find(p.id());
  if (it == state_.end()) return "";
  const std::vector<std::string> names = state_names(p, g);
  for (std::size_t k = 0; k < it->second.size() && k < names.size(); ++k) {
    if (!all_finite(it->second[k])) return pname + "." + names[k];
  }
  return "";
}

void Optimizer::zero_grad() {
  for (ParamGroup& group : groups_) {
    for (Variable& p : group.params) p.zero_grad();
  }
}

double Optimizer::current_learning_rate(std::size_t g) const {
  return learning_rate_at(step_, g);
}

double Optimizer::learning_rate_at(std::int64_t k, std::size_t g) const {
  if (g >= groups_.size()) {
    throw Error("optimizer " + name() + ": no parameter group " + std::to_string(g) + " (it has " +
                std::to_string(groups_.size()) + ")");
  }
  return groups_[g].learning_rate->value(k);
}

std::vector<Variable> Optimizer::parameters() const {
  std::vector<Variable> out;
  for (const ParamGroup& g : groups_) out.insert(out.end(), g.params.begin(), g.params.end());
  return out;
}

std::map<std::string, Tensor> Optimizer::state_tensors() const {
  std::map<std::string, Tensor> out;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    for (std::size_t i = 0; i < groups_[g].params.size(); ++i) {
      const Variable& p = groups_[g].params[i];
      auto it = state_.find(p.id());
      if (it == state_.end()) continue;
      const std::vector<std::string> names = state_names(p, g);
      for (std::size_t k = 0; k < names.size(); ++k) {
        out[parameter_name(groups_[g], g, i) + "." + names[k]] = it->second[k];
      }
      auto c = kahan_.find(p.id());
      if (c != kahan_.end())
        out[parameter_name(groups_[g], g, i) + ".kahan_compensation"] = c->second;
    }
  }
  return out;
}

void Optimizer::load_state_tensors(const std::map<std::string, Tensor>& state,
                                   std::int64_t step_index) {
  if (step_index < 0) {
    throw Error("optimizer " + name() + ": step index " + std::to_string(step_index) +
                " (expected >= 0)");
  }
  // Every tensor is checked before any is taken: a refused state leaves the optimizer as it was.
  std::set<std::string> known;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    for (std::size_t i = 0; i < groups_[g].params.size(); ++i) {
      const Variable& p = groups_[g].params[i];
      const std::string pname = parameter_name(groups_[g], g, i);
      const std::vector<std::string> names = state_names(p, g);
      for (std::size_t k = 0; k < names.size(); ++k) {
        const std::string key = pname + "." + names[k];
        known.insert(key);
        const auto it = state.find(key);
        if (it == state.end()) continue;
        if (!it->second.defined()) {
          throw Error("optimizer " + name() + ": state '" + key + "' is undefined");
        }
        detail::check_loaded_state(it->second, key, names[k], name());
        const tensor::Shape want = init_state(k, p, g).shape();
        if (!(it->second.shape() == want)) {
          throw Error("optimizer " + name() + ": state '" + key + "' has shape " +
                      it->second.shape().to_string() + ", expected " + want.to_string());
        }
      }
      const std::string kahan = pname + ".kahan_compensation";
      known.insert(kahan);
      if (const auto c = state.find(kahan); c != state.end()) {
        if (!c->second.defined() || !(c->second.shape() == p.shape())) {
          throw Error("optimizer " + name() + ": state '" + kahan + "' has shape " +
                      (c->second.defined() ? c->second.shape().to_string() : "(undefined)") +
                      ", expected " + p.shape().to_string());
        }
      }
    }
  }
  for (const auto& [key, t] : state) {
    if (known.count(key) == 0) {
      throw Error("optimizer " + name() + ": state '" + key +
                  "' belongs to no parameter of this optimizer");
    }
  }
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    for (std::size_t i = 0; i < groups_[g].params.size(); ++i) {
      Variable& p = groups_[g].params[i];
      const std::string pname = parameter_name(groups_[g], g, i);
      const std::vector<std::string> names = state_names(p, g);
      std::vector<Tensor> tensors;
      for (const std::string& n : names) {
        auto it = state.find(pname + "." + n);
        if (it == state.end()) continue;
        const Format f = per_element(it->second, p) ? training_.state_format : Format::float32;
        tensors.push_back(it->second.to(f).clone());
      }
      if (training_.master_weights == MasterWeights::bfloat16_kahan) {
        auto c = state.find(pname + ".kahan_compensation");
        if (c != state.end()) kahan_[p.id()] = c->second.to(Format::bfloat16).clone();
      }
      if (tensors.empty()) continue;  // this parameter had not been stepped yet
      if (tensors.size() != names.size()) {
        throw Error("optimizer " + name() + ": state of '" + pname + "' is incomplete (" +
                    std::to_string(tensors.size()) + " of " + std::to_string(names.size()) +
                    " tensors)");
      }
      state_[p.id()] = tensors;
    }
  }
  step_ = step_index;
}

}  // namespace mantissa::optim
