#include "mantissa/config/config.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <variant>

#include "config_internal.hpp"
#include "mantissa/read_file.hpp"
#include "support/number_text.hpp"
#include "yaml_document.hpp"

namespace mantissa::config {
namespace {

using detail::Reader;
constexpr std::int64_t kMaxConfigBytes = 16 << 20;  // a config is text a person writes
const char* kNum = "a number";
const char* kInt = "an integer";
const char* kBool = "true or false";
const char* kStr = "a string";

// One step of an override's path: a mapping key, or a list index ("schedulers[1]").
struct PathStep {
  std::string key;
  std::optional<std::size_t> index;
};

std::vector<PathStep> path_steps(const std::string& path) {
  std::vector<PathStep> steps;
  if (path.empty() || path.front() == '.' || path.back() == '.' ||
      path.find("..") != std::string::npos) {
    throw Error("--set " + path + ": an empty key in the path (keys are joined by single dots)");
  }
  std::stringstream ss(path);
  for (std::string k; std::getline(ss, k, '.');) {
    const auto open = k.find('[');
    if (open == std::string::npos || k.back() != ']') {
      steps.push_back({k, std::nullopt});
      continue;
    }
    const std::string digits = k.substr(open + 1, k.size() - open - 2);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
      throw Error("--set " + path + ": '" + k + "' is not key[index]");
    }
    std::size_t index = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec != std::errc() || end != digits.data() + digits.size()) {
      throw Error("--set " + path + ": the index in '" + k + "' is too large");
    }
    steps.push_back({k.substr(0, open), std::nullopt});
    steps.push_back({k.substr(0, open), index});
  }
  return steps;
}

// Sets the node at `path` (keys and list indices; an index one past the end appends).
void apply_override(YAML::Node& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error("--set '" + assignment + "': expected key.path=value");
  }
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  if (text.find_first_not_of(" \t") == std::string::npos) {
    throw Error("--set '" + assignment + "': no value after '=' (write " + path +
                "=null to restore the default)");
  }
  const YAML::Node value = detail::load_yaml_document(text, "--set '" + assignment + "'");
  if (!value.IsDefined() || value.IsNull()) {
    // Only YAML's own spellings of null restore a default; a comment ("#3") or a document
    // marker ("...", "---") reads as nothing, which the user cannot have meant.
    const auto first = text.find_first_not_of(" \t"), last = text.find_last_not_of(" \t");
    const std::string word = text.substr(first, last - first + 1);
    if (word != "null" && word != "Null" && word != "NULL" && word != "~") {
      throw Error("--set '" + assignment + "': '" + word +
                  "' reads as no value in YAML (a comment or a document marker; write " + path +
                  "=null to restore the default, or quote a string)");
    }
  }
  const std::vector<PathStep> steps = path_steps(path);
  // Walk with fresh handles so assignment never rebinds an existing node.
  std::vector<YAML::Node> chain{root};
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const PathStep& s = steps[i];
    YAML::Node here = chain.back();
    const bool last = i + 1 == steps.size();
    if (s.index) {
      if (!here.IsSequence() || *s.index > here.size()) {
        throw Error("--set " + path + ": '" + s.key + "' has no element " +
                    std::to_string(*s.index));
      }
      if (*s.index == here.size()) {
        if (!last)
          throw Error("--set " + path + ": '" + s.key + "[" + std::to_string(*s.index) +
                      "]' does not exist yet");
        here.push_back(value);
        return;
      }
      if (last) {
        here[*s.index] = value;
        return;
      }
      chain.push_back(here[*s.index]);
      continue;
    }
    if (last) {
      here[s.key] = value;
      return;
    }
    YAML::Node next = here[s.key];
    const bool indexed = steps[i + 1].index.has_value();
    if (next && !next.IsNull() && !(indexed ? next.IsSequence() : next.IsMap())) {
      throw Error("--set " + path + ": '" + s.key + "' is not a " + (indexed ? "list" : "mapping"));
    }
    chain.push_back(next);
  }
}

ModelConfig parse_model(Reader r) {
  ModelConfig m;
  m.kind = r.require_named("name", kModelNames);
  if (m.kind == ModelKind::gpt) {
    nn::GptConfig& g = m.gpt;
    g.vocab_size = r.get_at_least("vocab_size", g.vocab_size, 1);
    g.max_position_embeddings =
        r.get_at_least("max_position_embeddings", g.max_position_embeddings, 1);
    g.hidden_size = r.get_at_least("hidden_size", g.hidden_size, 1);
    g.num_hidden_layers = r.get_at_least("num_hidden_layers", g.num_hidden_layers, 1);
    g.num_heads = r.get_at_least("num_heads", g.num_heads, 1);
    g.filter_size = r.get_at_least("filter_size", g.filter_size, 1);
    g.dropout_rate = static_cast<float>(r.get<double>("dropout_rate", g.dropout_rate, kNum));
    g.tie_embeddings = r.get<bool>("tie_embeddings", g.tie_embeddings, kBool);
    // A standard deviation (PyTorch's normal_ refuses a negative one).
    g.init_std = static_cast<float>(r.get_number("initializer_range", g.init_std,
                                                 optim::Range{0.0, nn::GptConfig::kMaxInitStd}));
    g.validate(r.path());
  } else if (m.kind == ModelKind::mlp) {
    nn::MlpConfig& c = m.mlp;
    c.input_size = r.get_at_least("input_size", c.input_size, 1);
    if (r.has("hidden_sizes")) {
      c.hidden_sizes.clear();
      const YAML::Node n = r.raw("hidden_sizes");
      if (!n.IsSequence())
        throw Error(r.key_path("hidden_sizes") + ": expected a list of integers");
      for (std::size_t i = 0; i < n.size(); ++i) {
        c.hidden_sizes.push_back(Reader::as<std::int64_t>(
            n[i], r.key_path("hidden_sizes") + "[" + std::to_string(i) + "]", kInt));
      }
    }
    c.num_classes = r.get_at_least("num_classes", c.num_classes, 1);
    c.activation = r.get_named("activation", c.activation, nn::kActivationNames);
    c.validate(r.path());
  } else {
    nn::CnnConfig& c = m.cnn;
    c.conv1_channels = r.get_at_least("conv1_channels", c.conv1_channels, 1);
    c.conv2_channels = r.get_at_least("conv2_channels", c.conv2_channels, 1);
    c.num_classes = r.get_at_least("num_classes", c.num_classes, 1);
    c.validate(r.path());
  }
  r.finish();
  return m;
}

// The learning-rate schedulers, described for the run's first log line.
std::string schedule_text(const TrainerConfig& c) {
  std::string out;
  for (const SchedulerConfig& s : c.schedulers) {
    if (s.key != ScheduledKey::learning_rate) continue;
    out += (out.empty() ? "" : "; ") + s.schedule->describe();
  }
  return out.empty() ? optim::constant(c.optimizer.learning_rate)->describe() : out;
}

// Adafactor's relative_step takes the step size from the step count: a learning rate or a
// learning-rate scheduler would be ignored, so either is an error (as the vendor's).
void check_relative_step(const TrainerConfig& c) {
  const auto* a = std::get_if<optim::Adafactor>(&c.optimizer.settings);
  if (a == nullptr || !a->relative_step) return;
  const bool scheduled = std::any_of(c.schedulers.begin(), c.schedulers.end(), [](const auto& s) {
    return s.key == ScheduledKey::learning_rate;
  });
  if (c.optimizer.learning_rate_given || scheduled) {
    throw Error(
        "trainer.init.optimizer.Adafactor.relative_step: the step size comes from the step "
        "count; drop the learning rate and the learning-rate schedulers");
  }
}

// The keys a dataset does not read: given, they would be ignored, so they are refused.
void refuse_unread_keys(Reader& r, DatasetKind dataset) {
  struct Unread {
    DatasetKind dataset;
    std::array<const char*, 3> keys;  // nullptr: none
    const char* reads;
  };
  static constexpr std::array<Unread, kDatasetNames.size()> kUnread = {{
      {DatasetKind::kjv,
       {"path", nullptr, nullptr},
       "split, batch_size, context, data_dir, val_fraction, shuffle"},
      {DatasetKind::text,
       {"data_dir", nullptr, nullptr},
       "split, batch_size, context, path, val_fraction, shuffle"},
      {DatasetKind::fashion_mnist,
       {"context", "data_dir", "val_fraction"},
       "split, batch_size, path, shuffle"},
  }};
  static_assert(
      [] {
        for (std::size_t i = 0; i < kUnread.size(); ++i) {
          if (kUnread[i].dataset != static_cast<DatasetKind>(i) || kUnread[i].reads == nullptr)
            return false;
        }
        return true;
      }(),
      "kUnread: one row per DatasetKind, in enum order");
  const Unread& u = kUnread[static_cast<std::size_t>(dataset)];
  for (const char* key : u.keys) {
    if (key != nullptr && r.has(key)) {
      throw Error(r.key_path(key) + ": the " + std::string(name_of(kDatasetNames, dataset)) +
                  " dataset does not read it (it reads: " + u.reads + ")");
    }
  }
}

DataloaderConfig parse_dataloader(Reader r) {
  DataloaderConfig d;
  d.dataset = r.require_named("dataset", kDatasetNames);
  refuse_unread_keys(r, d.dataset);
  d.split = r.get_named("split", d.split, kSplitNames);
  const bool images = d.dataset == DatasetKind::fashion_mnist;
  if (d.split == (images ? Split::val : Split::test)) {
    throw Error(r.key_path("split") + ": '" + std::string(name_of(kSplitNames, d.split)) +
                "' (expected " + (images ? "train or test" : "train or val") + ")");
  }
  d.batch_size = r.get_at_least("batch_size", d.batch_size, 1);
  d.context = r.get_at_least("context", d.context, 1);
  d.path = r.get<std::string>("path", d.path, kStr);
  if (d.dataset == DatasetKind::text && d.path.empty())
    throw Error(r.key_path("path") + ": missing (the text file)");
  d.data_dir = r.get<std::string>("data_dir", d.data_dir, kStr);
  d.val_fraction = r.get<double>("val_fraction", d.val_fraction, kNum);
  if (!(d.val_fraction > 0 && d.val_fraction < 1)) {
    throw Error(r.key_path("val_fraction") + ": " + support::value_text(d.val_fraction) +
                " must be in (0, 1)");
  }
  d.shuffle = r.get<bool>("shuffle", d.shuffle, kBool);
  r.finish();
  return d;
}

// A note when training reads the very data validation reads (text: the same part of the one
// corpus; images: the same split of the same directory): allowed, but its validation loss then
// measures nothing held out, which a user should be told before the first step.
std::optional<std::string> same_data_note(const TrainerConfig& c) {
  const DataloaderConfig& t = c.train_data;
  const bool images = t.dataset == DatasetKind::fashion_mnist;
  const Split held_out = images ? Split::test : Split::val;
  const Split validated = c.val_data ? c.val_data->split : held_out;
  const bool same_files =
      !images || !c.val_data || c.val_data->path.empty() || c.val_data->path == t.path;
  if (t.split != validated || !same_files) return std::nullopt;
  // Name the key that moved off the usual arrangement (training on train, validating on the
  // held-out split) and the value that puts it back.
  const std::string split(name_of(kSplitNames, t.split));
  const std::string held(name_of(kSplitNames, held_out));
  if (t.split == Split::train) {
    return "trainer.fit.val_dataloader.split: '" + split +
           "' is the data training reads too: the validation loss measures data the model "
           "trains on (val_dataloader.split: " +
           held + " keeps them apart)";
  }
  return "trainer.fit.train_dataloader.split: '" + split +
         "' is the data validation reads too: the validation loss measures data the model "
         "trains on (train_dataloader.split: train keeps them apart)";
}

TrainerConfig parse_tree(const std::string& yaml_text, const std::vector<std::string>& overrides,
                         const std::string& source) {
  YAML::Node root = detail::load_yaml_document(yaml_text, source);
  if (!root || !root.IsMap()) throw Error(source + ": expected a mapping with the key 'trainer'");
  for (const std::string& o : overrides) apply_override(root, o);

  TrainerConfig c;
  detail::migrate_legacy_keys(root, c.notes);
  Reader top(root, "");
  Reader trainer = top.child("trainer");
  Reader init = trainer.child("init");
  c.seed = init.get<std::uint64_t>("seed", c.seed, "a non-negative integer");
  c.model = parse_model(init.child("model"));
  if (!init.has("optimizer")) throw Error("trainer.init.optimizer: missing");
  c.optimizer = detail::parse_optimizer(init.raw("optimizer"), "trainer.init.optimizer");
  if (init.has("schedulers")) {
    c.schedulers = detail::parse_schedulers(init.raw("schedulers"), "trainer.init.schedulers");
  }
  c.schedule_text = schedule_text(c);
  check_relative_step(c);
  c.precision =
      init.has("precision") ? detail::parse_precision(init.child("precision"), c.notes) : [] {
        amp::MixedPrecision m;
        m.enabled = false;
        return m;
      }();
  c.loop = detail::parse_loop(init.child("loop"));
  c.dist = detail::parse_dist(init.child("dist"));
  {
    Reader ck = init.child("checkpoint");
    c.checkpoint.steps = ck.get_at_least("steps", c.checkpoint.steps, 0);
    c.checkpoint.keep = ck.get_at_least("keep", c.checkpoint.keep, 1);
    c.checkpoint.dir = ck.get<std::string>("dir", c.checkpoint.dir, kStr);
    ck.finish();
  }
  {
    Reader lg = init.child("logging");
    c.logging.log_steps = lg.get_at_least("log_steps", c.logging.log_steps, 1);
    c.logging.precision_stats_steps =
        lg.get_at_least("precision_stats_steps", c.logging.precision_stats_steps, 0);
    c.logging.attribute_overflows =
        lg.get<bool>("attribute_overflows", c.logging.attribute_overflows, kBool);
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
  if (std::optional<std::string> note = same_data_note(c)) c.notes.push_back(*note);
  YAML::Emitter out;
  out << root;
  c.yaml = out.c_str();
  return c;
}

}  // namespace

TrainerConfig parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides,
                           const std::string& source) {
  try {
    return parse_tree(yaml_text, overrides, source);
  } catch (const YAML::Exception& e) {  // a shape the checks did not foresee: still an Error
    throw Error(source + ": " + e.what());
  }
}

TrainerConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_config(read_file(path, "the config file", kMaxConfigBytes), overrides, path);
}

std::string config_section(const std::string& yaml, const std::string& key) {
  const YAML::Node n = YAML::Load(yaml)["trainer"]["init"][key];
  if (!n) return "unset";
  YAML::Emitter out;
  out << YAML::Flow << n;
  return out.c_str();
}

std::string with_sections(const std::string& yaml, const std::string& from,
                          const std::vector<std::string>& keys) {
  YAML::Node root = YAML::Load(yaml);
  const YAML::Node source = YAML::Load(from)["trainer"]["init"];
  YAML::Node init = root["trainer"]["init"];
  for (const std::string& k : keys) {
    if (source[k]) {
      init[k] = YAML::Clone(source[k]);
    } else {
      init.remove(k);
    }
  }
  YAML::Emitter out;
  out << root;
  return out.c_str();
}

}  // namespace mantissa::config
