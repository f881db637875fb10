#include "mantissa/train/trainer.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "mantissa/amp/optimizer_step.hpp"
#include "mantissa/error.hpp"
#include "mantissa/train/checkpoint.hpp"
#include "task.hpp"

namespace mantissa::train {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string fmt_double(double v, const char* f = "%.4g") {
  char b[64];
  std::snprintf(b, sizeof(b), f, v);
  return b;
}

}  // namespace

Trainer::Trainer(TrainerConfig config, std::function<void(const std::string&)> out)
    : config_(std::move(config)), out_(std::move(out)) {
  policy_ = config_.precision.policy();
  run_dir_ = config_.checkpoint.dir.empty() ? "runs/default" : config_.checkpoint.dir;
  task_ = make_task(config_);
  optim::ParamGroup group;
  for (auto& [name, p] : task_->module().named_parameters()) {
    group.params.push_back(p);
    group.names.push_back(name);
  }
  group.learning_rate = config_.learning_rate;
  group.hyperparameters = config_.optimizer.hyperparameters;
  optimizer_ = optim::make_optimizer(config_.optimizer.name, {group});
  scaler_ = config_.precision.make_scaler([this](const std::string& l) { log(l); });
}

Trainer::~Trainer() = default;

void Trainer::log(const std::string& line) const {
  if (out_) {
    out_(line);
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

void Trainer::write_metrics(const std::string& json_line) const {
  std::filesystem::create_directories(run_dir_);
  std::ofstream f(std::filesystem::path(run_dir_) / "metrics.jsonl", std::ios::app);
  f << json_line << "\n";
}

std::map<std::string, tensor::Tensor> Trainer::state_tensors() const {
  std::map<std::string, tensor::Tensor> t;
  for (const auto& [name, p] : task_->module().named_parameters()) t["model." + name] = p.value();
  for (const auto& [name, s] : optimizer_->state_tensors()) t["optimizer." + name] = s;
  return t;
}

std::map<std::string, std::string> Trainer::state_metadata() const {
  std::map<std::string, std::string> m;
  m["global_step"] = std::to_string(global_step_);
  m["optimizer_step"] = std::to_string(optimizer_->step_index());
  m["config"] = config_.yaml;
  m["fp16_type"] = policy_.enabled() ? std::string(numerics::name(policy_.half)) : "float32";
  const data::LoaderState ls = task_->loader_state();
  m["train_loader"] = json{{"epoch", ls.epoch}, {"position", ls.position}}.dump();
  const tensor::RngState rs = task_->rng_state();
  m["rng"] = json{{"seed", rs.seed}, {"counter", rs.counter}}.dump();
  if (scaler_) {
    const amp::ScalerState& s = scaler_->state();
    m["scaler"] = json{{"loss_scale", s.loss_scale},
                       {"steps_since_rescale", s.steps_since_rescale},
                       {"overflows_since_rescale", s.overflows_since_rescale},
                       {"num_skipped_steps", s.num_skipped_steps},
                       {"hysteresis_left", s.hysteresis_left},
                       {"scaling_stopped", s.scaling_stopped}}
                      .dump();
  }
  return m;
}

std::string Trainer::save_checkpoint_now() {
  const std::string path =
      save_checkpoint(run_dir_, global_step_, {state_tensors(), state_metadata()});
  apply_retention(run_dir_, config_.checkpoint.keep);
  return path;
}

void Trainer::restore(const std::string& path) {
  const Checkpoint c = load_checkpoint(path);
  try {
    std::map<std::string, tensor::Tensor> model, opt;
    for (const auto& [name, t] : c.tensors) {
      if (name.rfind("model.", 0) == 0) model[name.substr(6)] = t;
      if (name.rfind("optimizer.", 0) == 0) opt[name.substr(10)] = t;
    }
    task_->module().load_state_dict(model);
    optimizer_->load_state_tensors(opt, std::stoll(c.metadata.at("optimizer_step")));
    global_step_ = std::stoll(c.metadata.at("global_step"));
    const json ls = json::parse(c.metadata.at("train_loader"));
    task_->set_loader_state(
        {ls.at("epoch").get<std::int64_t>(), ls.at("position").get<std::int64_t>()});
    const json rs = json::parse(c.metadata.at("rng"));
    task_->set_rng_state(
        {rs.at("seed").get<std::uint64_t>(), rs.at("counter").get<std::uint64_t>()});
    if (scaler_) {
      if (c.metadata.count("scaler") == 0)
        throw Error("no loss-scaler state, but this run scales the loss");
      const json s = json::parse(c.metadata.at("scaler"));
      amp::ScalerState st;
      st.loss_scale = s.at("loss_scale").get<double>();
      st.steps_since_rescale = s.at("steps_since_rescale").get<std::int64_t>();
      st.overflows_since_rescale = s.at("overflows_since_rescale").get<std::int64_t>();
      st.num_skipped_steps = s.at("num_skipped_steps").get<std::int64_t>();
      st.hysteresis_left = s.at("hysteresis_left").get<int>();
      st.scaling_stopped = s.at("scaling_stopped").get<bool>();
      scaler_->load_state(st);
    }
    policy_.half = numerics::parse_format(c.metadata.at("fp16_type")).value_or(policy_.half);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  } catch (const std::exception& e) {  // missing metadata keys, malformed JSON
    throw Error(path + ": checkpoint metadata is malformed (" + e.what() + ")");
  }
  log("resumed from " + path + " at step " + std::to_string(global_step_));
}

EvalResult Trainer::evaluate() {
  precision::Autocast cast(policy_);
  autograd::NoGradGuard no_grad;
  task_->module().eval();
  const EvalResult r = task_->evaluate(config_.loop.eval_steps);
  task_->module().train();
  json j{{"eval_step", global_step_}, {"loss", r.loss}, {"steps", r.steps}};
  std::string line =
      "eval at step " + std::to_string(global_step_) + ": loss " + fmt_double(r.loss);
  if (r.perplexity > 0) {
    j["perplexity"] = r.perplexity;
    line += ", perplexity " + fmt_double(r.perplexity);
  } else {
    j["accuracy"] = r.accuracy;
    line += ", accuracy " + fmt_double(r.accuracy);
  }
  write_metrics(j.dump());
  log(line);
  return r;
}

StepResult Trainer::train_step() {
  const std::int64_t accum = config_.loop.grad_accum_steps;
  StepResult r;
  task_->module().train();  // dropout on
  {
    precision::Autocast cast(policy_);
    for (std::int64_t a = 0; a < accum; ++a) {
      autograd::Variable loss = task_->next_train_loss();
      r.loss += loss.value().item() / static_cast<double>(accum);
      if (accum > 1) loss = autograd::scale(loss, 1.0f / static_cast<float>(accum));
      autograd::backward(scaler_ ? scaler_->scale(loss) : loss);
    }
    r.report = amp::finish_step(*optimizer_, scaler_.get(), config_.precision.max_gradient_norm,
                                config_.precision.max_gradient_value);
  }
  if (scaler_) {
    if (auto wider = scaler_->take_fallback()) {
      policy_.half = *wider;
      log("precision falls back to " + std::string(numerics::name(*wider)) + " from here on");
    }
  }
  ++global_step_;
  return r;
}

std::int64_t Trainer::items_per_step() const {
  return task_->items_per_batch() * config_.loop.grad_accum_steps;
}
const char* Trainer::item_unit() const {
  return task_->unit();
}
std::int64_t Trainer::parameter_count() const {
  return task_->module().parameter_count();
}

RunSummary Trainer::run(const std::string& mode, const std::optional<std::string>& resume) {
  if (mode != "train" && mode != "eval" && mode != "train_and_eval") {
    throw Error("--mode: '" + mode + "' (expected one of: train, eval, train_and_eval)");
  }
  if (resume) {
    const std::optional<std::string> path =
        *resume == "latest" ? latest_checkpoint(run_dir_) : resume;
    if (path) {
      restore(*path);
    } else if (mode == "eval") {
      throw Error("eval: no checkpoint in " + run_dir_ + " to evaluate (train first)");
    } else {
      log("no checkpoint in " + run_dir_ + ": starting from step 0");
    }
  } else if (mode == "eval") {
    throw Error("eval: give --resume latest or a checkpoint path");
  }
  RunSummary summary;
  if (mode == "eval") {
    summary.eval = evaluate();
    summary.global_step = global_step_;
    return summary;
  }
  log("training " + config_.model.name + " (" + std::to_string(task_->module().parameter_count()) +
      " parameters), precision " + policy_.describe() + ", " + config_.optimizer.name + ", lr " +
      config_.schedule_text + ", run directory " + run_dir_);
  const bool tty = ::isatty(STDERR_FILENO) != 0 && !out_;
  auto window_start = Clock::now();
  const auto run_start = window_start;
  std::int64_t window_items = 0, start_step = global_step_;
  double loss_sum = 0;
  std::int64_t loss_count = 0;
  std::int64_t saved_at = -1;  // the step the last periodic checkpoint holds
  while (global_step_ < config_.loop.max_steps) {
    if (stop_.load()) {
      summary.interrupted = true;
      break;
    }
    const auto [step_loss, report] = train_step();
    window_items += items_per_step();
    loss_sum += step_loss;
    ++loss_count;
    summary.last_loss = step_loss;
    const bool log_now =
        global_step_ % config_.logging.log_steps == 0 || global_step_ == config_.loop.max_steps;
    if (log_now) {
      const double secs = std::chrono::duration<double>(Clock::now() - window_start).count();
      const double rate = static_cast<double>(window_items) / std::max(secs, 1e-9);
      const double done = static_cast<double>(global_step_ - start_step);
      const double elapsed = std::chrono::duration<double>(Clock::now() - run_start).count();
      const double eta =
          elapsed / done * static_cast<double>(config_.loop.max_steps - global_step_);
      const double mean_loss = loss_sum / static_cast<double>(loss_count);
      json j{{"step", global_step_},
             {"loss", mean_loss},
             {"lr", optimizer_->current_learning_rate()},
             {"loss_scale", report.loss_scale},
             {"skipped_steps", report.skipped_steps},
             {"grad_norm", report.grad_norm},
             {std::string(task_->unit()) + "_per_s", rate}};
      write_metrics(j.dump());
      const std::string line =
          "step " + std::to_string(global_step_) + "/" + std::to_string(config_.loop.max_steps) +
          "  loss " + fmt_double(mean_loss) + "  scale " + fmt_double(report.loss_scale) + "  lr " +
          fmt_double(optimizer_->current_learning_rate(), "%.3g") + "  skipped " +
          std::to_string(report.skipped_steps) + "  " + fmt_double(rate, "%.0f") + " " +
          task_->unit() + "/s  eta " + fmt_double(eta, "%.0f") + "s";
      if (tty) {
        std::fprintf(stderr, "\r%-110s", line.c_str());
        std::fflush(stderr);
      } else {
        log(line);
      }
      window_start = Clock::now();
      window_items = 0;
      loss_sum = 0;
      loss_count = 0;
    }
    if (mode == "train_and_eval" && config_.loop.eval_frequency > 0 &&
        global_step_ % config_.loop.eval_frequency == 0 && global_step_ < config_.loop.max_steps) {
      if (tty) std::fprintf(stderr, "\n");
      summary.eval = evaluate();
    }
    if (config_.checkpoint.steps > 0 && global_step_ % config_.checkpoint.steps == 0) {
      summary.last_checkpoint = save_checkpoint_now();
      saved_at = global_step_;
    }
  }
  if (tty) std::fprintf(stderr, "\n");
  if (saved_at != global_step_) summary.last_checkpoint = save_checkpoint_now();
  log("checkpoint " + summary.last_checkpoint + (summary.interrupted ? " (interrupted)" : ""));
  if (mode == "train_and_eval" && !summary.interrupted) summary.eval = evaluate();
  summary.global_step = global_step_;
  summary.skipped_steps = scaler_ ? scaler_->num_skipped_steps() : 0;
  return summary;
}

}  // namespace mantissa::train
