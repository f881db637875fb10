// Trainer::restore: a checkpoint's state into the run, after its settings were held against
// the config's (a precision or optimizer that differs is an error unless the caller says
// which one wins).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "mantissa/amp/quantized_layers.hpp"
#include "mantissa/error.hpp"
#include "mantissa/train/checkpoint.hpp"
#include "mantissa/train/trainer.hpp"
#include "task.hpp"

namespace mantissa::train {
namespace {

// The differences between two configs' precision and optimizer, one phrase each.
struct Differences {
  std::vector<std::string> precision, optimizer;
  bool empty() const { return precision.empty() && optimizer.empty(); }
  std::string text() const {
    std::string out;
    for (const auto* list : {&precision, &optimizer}) {
      for (const std::string& d : *list) out += (out.empty() ? "" : "; ") + d;
    }
    return out;
  }
};

std::string both(const std::string& key, const std::string& theirs, const std::string& ours) {
  return key + " is " + theirs + " in the checkpoint, " + ours + " in the config";
}

Differences compare(const config::TrainerConfig& theirs, const config::TrainerConfig& ours) {
  Differences d;
  if (!(theirs.precision == ours.precision)) {
    d.precision.push_back(both("trainer.init.precision",
                               config::config_section(theirs.yaml, "precision"),
                               config::config_section(ours.yaml, "precision")));
  }
  const optim::OptimizerSettings &a = theirs.optimizer.settings, &b = ours.optimizer.settings;
  if (!optim::same_settings(a, b) ||
      theirs.optimizer.learning_rate != ours.optimizer.learning_rate ||
      theirs.optimizer.params.size() != ours.optimizer.params.size()) {
    d.optimizer.push_back(both("trainer.init.optimizer",
                               config::config_section(theirs.yaml, "optimizer"),
                               config::config_section(ours.yaml, "optimizer")));
  }
  // (Without schedulers the schedule is the learning rate, compared above.)
  const bool scheduled = !theirs.schedulers.empty() || !ours.schedulers.empty();
  if (scheduled && (theirs.schedule_text != ours.schedule_text ||
                    theirs.schedulers.size() != ours.schedulers.size())) {
    d.optimizer.push_back(both("trainer.init.schedulers",
                               config::config_section(theirs.yaml, "schedulers"),
                               config::config_section(ours.yaml, "schedulers")));
  }
  return d;
}

// The first field in which two models compute different functions ("num_heads is 2 in the
// checkpoint, 4 in the config"), or "" when the same architecture. Initialization and dropout
// are not compared (a resumed run may change them); the CNN's input shape comes from the data
// (its weights' shapes are checked when they load).
std::string model_difference(const config::ModelConfig& theirs, const config::ModelConfig& ours) {
  const auto field = [](const char* name, const auto& a, const auto& b) -> std::string {
    if (a == b) return "";
    return fmt::format("trainer.init.model.{} is {} in the checkpoint, {} in the config", name, a,
                       b);
  };
  if (theirs.kind != ours.kind) {
    return "trainer.init.model.name is " + std::string(name_of(config::kModelNames, theirs.kind)) +
           " in the checkpoint, " + std::string(name_of(config::kModelNames, ours.kind)) +
           " in the config";
  }
  std::vector<std::string> d;
  switch (ours.kind) {
    case config::ModelKind::gpt: {
      const nn::GptConfig &a = theirs.gpt, &b = ours.gpt;
      d = {field("vocab_size", a.vocab_size, b.vocab_size),
           field("max_position_embeddings", a.max_position_embeddings, b.max_position_embeddings),
           field("hidden_size", a.hidden_size, b.hidden_size),
           field("num_hidden_layers", a.num_hidden_layers, b.num_hidden_layers),
           field("num_heads", a.num_heads, b.num_heads),
           field("filter_size", a.filter_size, b.filter_size),
           field("tie_embeddings", a.tie_embeddings, b.tie_embeddings)};
      break;
    }
    case config::ModelKind::mlp: {
      const nn::MlpConfig &a = theirs.mlp, &b = ours.mlp;
      d = {field("input_size", a.input_size, b.input_size),
           field("hidden_sizes", fmt::format("[{}]", fmt::join(a.hidden_sizes, ", ")),
                 fmt::format("[{}]", fmt::join(b.hidden_sizes, ", "))),
           field("num_classes", a.num_classes, b.num_classes),
           field("activation", name_of(nn::kActivationNames, a.activation),
                 name_of(nn::kActivationNames, b.activation))};
      break;
    }
    case config::ModelKind::cnn: {
      const nn::CnnConfig &a = theirs.cnn, &b = ours.cnn;
      d = {field("conv1_channels", a.conv1_channels, b.conv1_channels),
           field("conv2_channels", a.conv2_channels, b.conv2_channels),
           field("num_classes", a.num_classes, b.num_classes)};
      break;
    }
  }
  for (const std::string& x : d) {
    if (!x.empty()) return x;
  }
  return "";
}

}  // namespace

void Trainer::check_model_of(const std::string& path, const config::TrainerConfig& theirs) const {
  const std::string d = model_difference(theirs.model, config_.model);
  if (!d.empty()) {
    throw Error(path + ": the checkpoint holds another model than the config's: " + d +
                " (a checkpoint loads only into the model it was trained as)");
  }
}

void Trainer::note_run_differences(const config::TrainerConfig& theirs) {
  if (theirs.seed != config_.seed) {
    log("trainer.init.seed is " + std::to_string(theirs.seed) + " in the checkpoint, " +
        std::to_string(config_.seed) +
        " in the config: the run continues the checkpoint's random state");
  }
  const config::DataloaderConfig &a = theirs.train_data, &b = config_.train_data;
  const auto text = [](const config::DataloaderConfig& d) {
    return fmt::format("{} {}, split {}, batch_size {}, context {}",
                       name_of(config::kDatasetNames, d.dataset),
                       d.path.empty() ? d.data_dir : d.path, name_of(config::kSplitNames, d.split),
                       d.batch_size, d.context);
  };
  if (text(a) != text(b)) {
    log("trainer.fit.train_dataloader is " + text(a) + " in the checkpoint, " + text(b) +
        " in the config: the run continues at the checkpoint's position in the config's data");
  }
}

void Trainer::reconcile_settings(const std::string& path, const config::TrainerConfig& theirs,
                                 ResumeSettings settings, bool& take_optimizer_state,
                                 bool& take_scaler_state) {
  const Differences d = compare(theirs, config_);
  take_optimizer_state = true;
  take_scaler_state = true;
  if (d.empty()) return;
  switch (settings) {
    case ResumeSettings::must_match:
      throw Error(
          path + ": the checkpoint was trained with other settings than the config's: " + d.text() +
          ". Say which win: --resume-settings checkpoint (continue as it was trained) "
          "or --resume-settings config (the config's; optimizer state is kept only for "
          "the same optimizer, the loss scale only for the same precision)");
    case ResumeSettings::checkpoint: {
      config_.precision = theirs.precision;
      config_.optimizer = theirs.optimizer;
      config_.schedulers = theirs.schedulers;
      config_.schedule_text = theirs.schedule_text;
      config_.yaml = config::with_sections(config_.yaml, theirs.yaml,
                                           {"precision", "optimizer", "schedulers"});
      build_optimizer_and_scaler();
      if (!d.precision.empty()) attach_recipes();
      log("resuming with the checkpoint's settings, not the config's: " + d.text());
      return;
    }
    case ResumeSettings::config:
      take_optimizer_state = optim::optimizer_name(theirs.optimizer.settings) ==
                             optim::optimizer_name(config_.optimizer.settings);
      take_scaler_state = d.precision.empty();
      log("resuming with the config's settings, not the checkpoint's: " + d.text());
      if (!take_optimizer_state) {
        log("the checkpoint's " + std::string(optim::optimizer_name(theirs.optimizer.settings)) +
            " state is not loaded: " + optimizer_->name() + " starts with fresh state");
      }
      if (!take_scaler_state) log("the loss scaler starts afresh (the precision changed)");
      return;
  }
}

void Trainer::reconcile_eval_precision(const std::string& path, const config::TrainerConfig& theirs,
                                       ResumeSettings settings) {
  const Differences d = compare(theirs, config_);
  if (d.precision.empty()) return;
  const std::string what = d.precision.front();
  switch (settings) {
    case ResumeSettings::must_match:
      throw Error(path +
                  ": the checkpoint was trained in another precision than the config's: " + what +
                  ". Say which the evaluation computes in: --resume-settings checkpoint (as it "
                  "was trained) or --resume-settings config");
    case ResumeSettings::checkpoint:
      config_.precision = theirs.precision;
      config_.yaml = config::with_sections(config_.yaml, theirs.yaml, {"precision"});
      build_optimizer_and_scaler();
      attach_recipes();
      log("evaluating in the checkpoint's precision, not the config's: " + what);
      return;
    case ResumeSettings::config:
      log("evaluating in the config's precision, not the checkpoint's: " + what);
      return;
  }
}

void Trainer::take_routes(const std::vector<kernels::RouteRecord>& routes) {
  const std::vector<kernels::RouteRecord> refused = kernels::pin_routes(routes);
  if (!refused.empty()) {
    log(std::to_string(refused.size()) + " of the checkpoint's " + std::to_string(routes.size()) +
        " matrix-product routes cannot run on this CPU (first: " +
        kernels::describe(refused.front().key) + " on " +
        std::string(precision::route_name(refused.front().route)) +
        "): those shapes are measured again, and the run does not continue bit for bit");
  }
}

void Trainer::restore(const std::string& path, const Checkpoint& c, bool for_training,
                      ResumeSettings settings) {
  const CheckpointMeta meta = decode_checkpoint_meta(c.metadata, path);
  if (!c.checksummed) {
    log(path + " was written before per-tensor checksums (" + kUnchecksummedVersion +
        "): its tensors are loaded unverified");
  }
  // A renamed file (ckpt-00000010 holding step 3) would be taken for the newest and its run
  // would overwrite checkpoints it never wrote.
  if (const std::optional<std::int64_t> named = step_in_checkpoint_name(path);
      named && *named != meta.global_step) {
    throw Error(path + ": its name says step " + std::to_string(*named) + ", its metadata step " +
                std::to_string(meta.global_step) +
                " (a renamed checkpoint? give it back its own name, ckpt-" +
                fmt::format("{:08d}", meta.global_step) + ".safetensors, or a name of your own)");
  }
  if (for_training && meta.global_step > config_.loop.max_steps) {
    throw Error(path + ": at step " + std::to_string(meta.global_step) +
                ", past trainer.init.loop.max_steps " + std::to_string(config_.loop.max_steps) +
                " (raise max_steps to train on; eval evaluates it as it is)");
  }
  bool take_optimizer_state = true, take_scaler_state = true;
  const config::TrainerConfig theirs = config_of_checkpoint(meta, path);
  check_model_of(path, theirs);
  if (for_training) {
    reconcile_settings(path, theirs, settings, take_optimizer_state, take_scaler_state);
    note_run_differences(theirs);
  } else {
    reconcile_eval_precision(path, theirs, settings);
  }
  try {
    task_->module().load_state_dict(under_prefix(kModelPrefix, c.tensors));
    global_step_ = meta.global_step;
    if (!for_training) return;
    if (take_optimizer_state) {
      optimizer_->load_state_tensors(under_prefix(kOptimizerPrefix, c.tensors),
                                     meta.optimizer_step);
    } else {
      optimizer_->set_step_index(meta.optimizer_step);
    }
    quant_->load_state_tensors(under_prefix(amp::kFp8Prefix, c.tensors));
    if (quant_->rounds_stochastically()) {
      if (!meta.stochastic_position) {
        throw Error(
            "checkpoint metadata lacks 'quant_stochastic_position', but this run rounds "
            "gradients stochastically (recipe nvfp4)");
      }
      quant_->set_stochastic_position(static_cast<std::uint64_t>(*meta.stochastic_position));
    }
    task_->set_loader_state(meta.train_loader);
    task_->set_rng_state(meta.rng);
    take_routes(meta.routes);
    if (take_scaler_state) {
      if (meta.scaler) {
        scaler_->load_state(*meta.scaler);
      } else if (scaler_->options().dynamic) {
        throw Error("no loss-scaler state, but this run scales the loss dynamically");
      }
      // The half format in use: the config's, or bfloat16 after a fall-back.
      const bool fell_back =
          scaler_->state().scaling_stopped && meta.fp16_type == numerics::Format::bfloat16;
      const numerics::Format ours = policy_.enabled() ? policy_.half : numerics::Format::float32;
      if (meta.fp16_type != ours && !fell_back) {
        throw Error("checkpoint metadata 'fp16_type': '" +
                    std::string(numerics::name(meta.fp16_type)) + "' disagrees with its config's " +
                    std::string(numerics::name(ours)));
      }
      policy_.half = fell_back ? meta.fp16_type : policy_.half;
    }
  } catch (const Error& e) {
    const std::string what = e.what();
    throw Error(what.rfind(path, 0) == 0 ? what : path + ": " + what);
  }
  last_finite_checkpoint_ = path;  // load_checkpoint verified every tensor finite
  log("resumed from " + path + " at step " + std::to_string(global_step_));
}

}  // namespace mantissa::train
