#include "mantissa/train/config.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <variant>

#include "config_internal.hpp"

namespace mantissa::train {
namespace {

using detail::Reader;
const char* kNum = "a number";
const char* kInt = "an integer";
const char* kBool = "true or false";
const char* kStr = "a string";

void apply_override(YAML::Node& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error("--set '" + assignment + "': expected key.path=value");
  }
  const std::string path = assignment.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw Error("--set '" + assignment + "': the value is not valid YAML (" + e.msg + ")");
  }
  std::vector<std::string> keys;
  std::stringstream ss(path);
  for (std::string k; std::getline(ss, k, '.');) keys.push_back(k);
  // Walk with fresh handles so assignment never rebinds an existing node.
  std::vector<YAML::Node> chain{root};
  for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
    YAML::Node next = chain.back()[keys[i]];
    if (next && !next.IsNull() && !next.IsMap()) {
      throw Error("--set " + path + ": '" + keys[i] + "' is not a mapping");
    }
    chain.push_back(next);
  }
  chain.back()[keys.back()] = value;
}

std::int64_t positive(Reader& r, const std::string& key, std::int64_t fallback,
                      std::int64_t min = 1) {
  const auto v = r.get<std::int64_t>(key, fallback, kInt);
  if (v < min) {
    throw Error(r.key_path(key) + ": " + std::to_string(v) + " must be >= " + std::to_string(min));
  }
  return v;
}

ModelConfig parse_model(Reader r) {
  ModelConfig m;
  m.kind = r.require_named("name", kModelNames);
  if (m.kind == ModelKind::gpt) {
    nn::GptConfig& g = m.gpt;
    g.vocab_size = positive(r, "vocab_size", g.vocab_size);
    g.max_position_embeddings = positive(r, "max_position_embeddings", g.max_position_embeddings);
    g.hidden_size = positive(r, "hidden_size", g.hidden_size);
    g.num_hidden_layers = positive(r, "num_hidden_layers", g.num_hidden_layers);
    g.num_heads = positive(r, "num_heads", g.num_heads);
    g.filter_size = positive(r, "filter_size", g.filter_size);
    g.dropout_rate = static_cast<float>(r.get<double>("dropout_rate", g.dropout_rate, kNum));
    g.tie_embeddings = r.get<bool>("tie_embeddings", g.tie_embeddings, kBool);
    g.init_std = static_cast<float>(r.get<double>("initializer_range", g.init_std, kNum));
    g.validate();
  } else if (m.kind == ModelKind::mlp) {
    nn::MlpConfig& c = m.mlp;
    c.input_size = positive(r, "input_size", c.input_size);
    if (r.has("hidden_sizes")) {
      c.hidden_sizes.clear();
      const YAML::Node n = r.raw("hidden_sizes");
      if (!n.IsSequence())
        throw Error(r.key_path("hidden_sizes") + ": expected a list of integers");
      for (std::size_t i = 0; i < n.size(); ++i) {
        c.hidden_sizes.push_back(Reader::as<std::int64_t>(n[i], r.key_path("hidden_sizes"), kInt));
      }
    }
    c.num_classes = positive(r, "num_classes", c.num_classes);
    c.activation = r.get_named("activation", c.activation, nn::kActivationNames);
    c.validate();
  } else {
    nn::CnnConfig& c = m.cnn;
    c.conv1_channels = positive(r, "conv1_channels", c.conv1_channels);
    c.conv2_channels = positive(r, "conv2_channels", c.conv2_channels);
    c.num_classes = positive(r, "num_classes", c.num_classes);
    c.validate();
  }
  r.finish();
  return m;
}

std::string optimizer_names_text() {
  std::string s;
  for (std::string_view n : optim::optimizer_names()) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

// {Name: {learning_rate, <the optimizer's fields>}}: the settings struct's field table says
// which keys exist and what each takes.
OptimizerConfig parse_optimizer_node(const YAML::Node& node, const std::string& path) {
  if (!node || !node.IsMap() || node.size() != 1) {
    throw Error(path + ": expected one optimizer, as {AdamW: {learning_rate: ..., ...}} (names: " +
                optimizer_names_text() + ")");
  }
  const std::string key = node.begin()->first.as<std::string>();
  std::string name = key;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  const std::optional<optim::OptimizerSettings> defaults = optim::default_settings(name);
  if (!defaults) {
    throw Error(path + ": unknown name '" + name + "' (expected one of: " + optimizer_names_text() +
                ")");
  }
  OptimizerConfig o{*defaults};
  Reader r(node.begin()->second, path + "." + key);
  o.learning_rate = r.get<double>("learning_rate", o.learning_rate, kNum);
  std::visit(
      [&](auto& s) {
        optim::for_each_field(
            s,
            [&](std::string_view field, double& v, const optim::Range&) {
              v = r.get<double>(std::string(field), v, kNum);
            },
            [&](std::string_view field, bool& v) {
              v = r.get<bool>(std::string(field), v, kBool);
            });
      },
      o.settings);
  r.finish();
  try {
    optim::validate(o.settings);
  } catch (const Error& e) {
    throw Error(r.path() + "." + e.what());
  }
  return o;
}

// loss_scaling_factor: "dynamic" or a number (static scaling; its range is the scaler's rule).
amp::LossScaling parse_loss_scaling(const std::string& text, const std::string& path) {
  if (text == "dynamic") return amp::DynamicLossScaling{};
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) {
    throw Error(path + "." + amp::loss_scaling_factor_error(text));
  }
  return amp::StaticLossScaling{v};
}

amp::MixedPrecision parse_precision(Reader r) {
  amp::MixedPrecision m;
  m.enabled = r.get<bool>("enabled", m.enabled, kBool);
  if (r.has("fp16_type")) {
    const auto text = r.require<std::string>("fp16_type", kStr);
    const std::optional<numerics::Format> f = numerics::parse_format(text);
    if (!f || !precision::is_half_format(*f)) {
      throw Error(r.path() + "." + precision::fp16_type_error(text));
    }
    m.fp16_type = *f;
  }
  if (r.has("loss_scaling_factor")) {
    m.loss_scaling = parse_loss_scaling(
        r.require<std::string>("loss_scaling_factor", "\"dynamic\" or a number"), r.path());
  }
  if (r.has("initial_loss_scale"))
    m.initial_loss_scale = r.require<double>("initial_loss_scale", kNum);
  if (r.has("steps_per_increase"))
    m.steps_per_increase = r.require<std::int64_t>("steps_per_increase", kInt);
  if (r.has("min_loss_scale")) m.min_loss_scale = r.require<double>("min_loss_scale", kNum);
  if (r.has("max_loss_scale")) m.max_loss_scale = r.require<double>("max_loss_scale", kNum);
  if (r.has("max_gradient_norm"))
    m.max_gradient_norm = r.require<double>("max_gradient_norm", kNum);
  if (r.has("max_gradient_value"))
    m.max_gradient_value = r.require<double>("max_gradient_value", kNum);
  m.precision_opt_level = r.get<int>("precision_opt_level", m.precision_opt_level, kInt);
  m.matmul_route = r.get_named("matmul_route", m.matmul_route, precision::kMatmulRouteNames);
  m.overflow_tolerance = r.get<double>("overflow_tolerance", m.overflow_tolerance, kNum);
  m.on_stuck = r.get_named("on_stuck", m.on_stuck, amp::kStuckPolicyNames);
  m.hysteresis = r.get<int>("hysteresis", m.hysteresis, kInt);
  m.grow_only_if_finite = r.get<bool>("grow_only_if_finite", m.grow_only_if_finite, kBool);
  r.finish();
  try {
    m.validate();
  } catch (const Error& e) {
    throw Error(r.path() + "." + e.what());
  }
  return m;
}

DataloaderConfig parse_dataloader(Reader r) {
  DataloaderConfig d;
  d.dataset = r.require_named("dataset", kDatasetNames);
  d.split = r.get_named("split", d.split, kSplitNames);
  const bool images = d.dataset == DatasetKind::fashion_mnist;
  if (d.split == (images ? Split::val : Split::test)) {
    throw Error(r.key_path("split") + ": '" + std::string(name_of(kSplitNames, d.split)) +
                "' (expected " + (images ? "train or test" : "train or val") + ")");
  }
  d.batch_size = positive(r, "batch_size", d.batch_size);
  d.context = positive(r, "context", d.context);
  d.path = r.get<std::string>("path", d.path, kStr);
  if (d.dataset == DatasetKind::text && d.path.empty())
    throw Error(r.key_path("path") + ": missing (the text file)");
  d.data_dir = r.get<std::string>("data_dir", d.data_dir, kStr);
  d.val_fraction = r.get<double>("val_fraction", d.val_fraction, kNum);
  if (!(d.val_fraction > 0 && d.val_fraction < 1)) {
    throw Error(r.key_path("val_fraction") + ": " + std::to_string(d.val_fraction) +
                " must be in (0, 1)");
  }
  d.shuffle = r.get<bool>("shuffle", d.shuffle, kBool);
  r.finish();
  return d;
}

}  // namespace

TrainerConfig parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides,
                           const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw Error(source + ": not valid YAML (" + e.what() + ")");
  }
  if (!root || !root.IsMap()) throw Error(source + ": expected a mapping with the key 'trainer'");
  for (const std::string& o : overrides) apply_override(root, o);

  TrainerConfig c;
  Reader top(root, "");
  Reader trainer = top.child("trainer");
  Reader init = trainer.child("init");
  c.seed = init.get<std::uint64_t>("seed", c.seed, "a non-negative integer");
  c.model = parse_model(init.child("model"));
  if (!init.has("optimizer")) throw Error("trainer.init.optimizer: missing");
  c.optimizer = parse_optimizer_node(init.raw("optimizer"), "trainer.init.optimizer");
  if (init.has("schedulers")) {
    const YAML::Node s = init.raw("schedulers");
    if (!s.IsSequence() || s.size() != 1) {
      throw Error("trainer.init.schedulers: expected a list with one learning-rate scheduler");
    }
    c.learning_rate = detail::parse_schedule(s[0], "trainer.init.schedulers[0]");
  } else {
    c.learning_rate = optim::constant(c.optimizer.learning_rate);
  }
  c.schedule_text = c.learning_rate->describe();
  c.precision = init.has("precision") ? parse_precision(init.child("precision")) : [] {
    amp::MixedPrecision m;
    m.enabled = false;
    return m;
  }();
  {
    Reader loop = init.child("loop");
    c.loop.max_steps = positive(loop, "max_steps", c.loop.max_steps);
    c.loop.eval_frequency = positive(loop, "eval_frequency", c.loop.eval_frequency, 0);
    c.loop.eval_steps = positive(loop, "eval_steps", c.loop.eval_steps);
    c.loop.grad_accum_steps = positive(loop, "grad_accum_steps", c.loop.grad_accum_steps);
    loop.finish();
  }
  {
    Reader ck = init.child("checkpoint");
    c.checkpoint.steps = positive(ck, "steps", c.checkpoint.steps, 0);
    c.checkpoint.keep = positive(ck, "keep", c.checkpoint.keep);
    c.checkpoint.dir = ck.get<std::string>("dir", c.checkpoint.dir, kStr);
    ck.finish();
  }
  {
    Reader lg = init.child("logging");
    c.logging.log_steps = positive(lg, "log_steps", c.logging.log_steps);
    lg.finish();
  }
  init.finish();
  Reader fit = trainer.child("fit");
  c.train_data = parse_dataloader(fit.child("train_dataloader"));
  if (fit.has("val_dataloader")) c.val_data = parse_dataloader(fit.child("val_dataloader"));
  fit.finish();
  trainer.finish();
  top.finish();
  const bool text_model = c.model.kind == ModelKind::gpt;
  const bool text_data = c.train_data.dataset != DatasetKind::fashion_mnist;
  if (text_model != text_data) {
    throw Error("trainer.fit.train_dataloader.dataset: '" +
                std::string(name_of(kDatasetNames, c.train_data.dataset)) +
                "' does not suit model '" + std::string(name_of(kModelNames, c.model.kind)) +
                "' (gpt takes kjv or text; mlp and cnn take fashion_mnist)");
  }
  if (c.val_data && text_data) {
    // Text validation reads the same corpus, split by the same fraction, as training.
    const DataloaderConfig& t = c.train_data;
    const DataloaderConfig& v = *c.val_data;
    const std::string at = "trainer.fit.val_dataloader.";
    if (v.dataset != t.dataset)
      throw Error(at + "dataset: '" + std::string(name_of(kDatasetNames, v.dataset)) +
                  "' must match the train_dataloader's '" +
                  std::string(name_of(kDatasetNames, t.dataset)) + "'");
    if (v.path != t.path)
      throw Error(at + "path: must match the train_dataloader's (one corpus, split by position)");
    if (v.data_dir != t.data_dir) throw Error(at + "data_dir: must match the train_dataloader's");
    if (v.val_fraction != t.val_fraction)
      throw Error(at + "val_fraction: must match the train_dataloader's");
    if (v.context > c.model.gpt.max_position_embeddings) {
      throw Error(at + "context: " + std::to_string(v.context) +
                  " exceeds trainer.init.model.max_position_embeddings " +
                  std::to_string(c.model.gpt.max_position_embeddings));
    }
  }
  if (text_model && c.train_data.context > c.model.gpt.max_position_embeddings) {
    throw Error("trainer.fit.train_dataloader.context: " + std::to_string(c.train_data.context) +
                " exceeds trainer.init.model.max_position_embeddings " +
                std::to_string(c.model.gpt.max_position_embeddings));
  }
  YAML::Emitter out;
  out << root;
  c.yaml = out.c_str();
  return c;
}

TrainerConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open the config file (missing or unreadable)");
  std::stringstream s;
  s << in.rdbuf();
  return parse_config(s.str(), overrides, path);
}

}  // namespace mantissa::train
