// `mantissa generate` (sample text from a GPT checkpoint) and `mantissa inspect`.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "commands.hpp"
#include "decimal_option.hpp"
#include "mantissa/config/config.hpp"
#include "mantissa/error.hpp"
#include "mantissa/nn/models.hpp"
#include "mantissa/tensor/random.hpp"
#include "mantissa/train/checkpoint.hpp"
#include "mantissa/train/trainer.hpp"
#include "terminal_text.hpp"

namespace mantissa::app {
namespace {

std::string resolve(const std::string& checkpoint) {
  std::error_code ec;  // an unreadable path falls through to the file's own error
  if (std::filesystem::is_directory(checkpoint, ec)) {
    if (auto latest = train::latest_checkpoint(checkpoint)) return *latest;
    throw Error(checkpoint + ": no checkpoint files in this directory");
  }
  return checkpoint;
}

// The most bytes one `generate` samples (the tests' tiny GPT samples about 7,500 a second on
// two cores: two minutes).
constexpr int kMostGeneratedBytes = 1'000'000;

struct GenerateArgs {
  std::string checkpoint, prompt = "In the beginning";
  int length = 200;
  double temperature = 0.8;
  std::uint64_t seed = 1;
};

// The GPT a checkpoint holds, rebuilt from the config stored in it: its size is checked
// against the tensors and this machine's memory before anything is allocated.
std::unique_ptr<nn::Gpt> load_gpt(const std::string& path) {
  const train::Checkpoint ck = train::load_checkpoint(path);
  const train::CheckpointMeta meta = train::decode_checkpoint_meta(ck.metadata, path);
  const config::TrainerConfig c = train::config_of_checkpoint(meta, path);
  if (c.model.kind != config::ModelKind::gpt) {
    throw Error(path + ": generate needs a GPT checkpoint (this is " +
                std::string(name_of(config::kModelNames, c.model.kind)) + ")");
  }
  const auto weights = train::under_prefix(train::kModelPrefix, ck.tensors);
  std::int64_t held = 0;
  for (const auto& [name, t] : weights) held += t.numel();
  const std::int64_t described = c.model.gpt.parameter_count();
  if (described != held) {
    throw Error(path + ": its config describes a GPT of " + std::to_string(described) +
                " parameters, but it holds " + std::to_string(held));
  }
  train::check_model_fits(described, path);
  auto gpt = std::make_unique<nn::Gpt>(c.model.gpt, c.seed);
  try {
    gpt->load_state_dict(weights);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  return gpt;
}

int generate(const GenerateArgs& a) {
  if (!(a.temperature >= 0 && std::isfinite(a.temperature))) {
    throw Error("--temperature: " + fmt::format("{}", a.temperature) +
                " (expected a finite number >= 0; 0: greedy)");
  }
  const std::string path = resolve(a.checkpoint);
  const std::unique_ptr<nn::Gpt> model = load_gpt(path);
  nn::Gpt& gpt = *model;
  const nn::GptConfig& config = gpt.config();
  gpt.eval();
  autograd::NoGradGuard no_grad;
  std::vector<std::int32_t> tokens;
  for (unsigned char ch : a.prompt) tokens.push_back(ch);
  if (tokens.empty()) tokens.push_back('\n');
  tensor::Rng rng(a.seed);
  const std::int64_t ctx = config.max_position_embeddings, vocab = config.vocab_size;
  // The sample is written as it is made, byte by byte (each byte is a whole forward pass):
  // an interrupted generation keeps what it printed.
  const auto put = [](const void* data, std::size_t n) {
    if (std::fwrite(data, 1, n, stdout) != n || std::fflush(stdout) != 0) {
      throw Error("generate: cannot write the sample to standard output");
    }
  };
  put(a.prompt.data(), a.prompt.size());
  for (int i = 0; i < a.length; ++i) {
    if (static_cast<std::int64_t>(tokens.size()) > 2 * ctx) {  // only the last ctx are read
      tokens.erase(tokens.begin(), tokens.end() - ctx);
    }
    const std::int64_t start =
        std::max<std::int64_t>(0, static_cast<std::int64_t>(tokens.size()) - ctx);
    const std::vector<std::int32_t> window(tokens.begin() + start, tokens.end());
    const auto t = static_cast<std::int64_t>(window.size());
    const std::vector<float> logits = gpt.logits(window, 1, t).value().to_vector();
    const float* last = logits.data() + (t - 1) * vocab;
    if (!std::all_of(last, last + vocab, [](float v) { return std::isfinite(v); })) {
      throw Error(path + ": the model gives non-finite logits at byte " + std::to_string(i) +
                  " of the sample");
    }
    std::int32_t next = 0;
    if (a.temperature == 0) {
      next = static_cast<std::int32_t>(std::max_element(last, last + vocab) - last);
    } else {
      const float m = *std::max_element(last, last + vocab);
      std::vector<double> p(static_cast<std::size_t>(vocab));
      double sum = 0;
      for (std::int64_t v = 0; v < vocab; ++v)
        sum += p[static_cast<std::size_t>(v)] = std::exp((last[v] - m) / a.temperature);
      double u = rng.uniform() * sum;
      for (std::int64_t v = 0; v < vocab; ++v) {
        u -= p[static_cast<std::size_t>(v)];
        if (u <= 0) {
          next = static_cast<std::int32_t>(v);
          break;
        }
      }
    }
    tokens.push_back(next);
    const char byte = static_cast<char>(next);  // every byte, NUL included
    put(&byte, 1);
  }
  put("\n", 1);
  return 0;
}

int inspect(const std::string& checkpoint) {
  const std::string path = resolve(checkpoint);
  const train::Checkpoint ck = train::load_checkpoint(path);
  std::printf("%s\n", terminal_safe(path).c_str());
  for (const char* key : {"global_step", "optimizer_step", "fp16_type", "scaler", "train_loader",
                          "rng", "dist_ranks"}) {
    auto it = ck.metadata.find(key);
    if (it != ck.metadata.end())
      std::printf("  %-15s %s\n", key, terminal_safe(it->second).c_str());
  }
  for (const auto& [name, t] : ck.tensors) {
    std::printf("  %-50s %-12s %s\n", terminal_safe(name).c_str(),
                std::string(numerics::name(t.format())).c_str(), t.shape().to_string().c_str());
  }
  std::int64_t total = 0;
  for (const auto& [name, t] : train::under_prefix(train::kModelPrefix, ck.tensors)) {
    total += t.numel();
  }
  std::printf("  %zu tensors, %lld model parameters\n", ck.tensors.size(),
              static_cast<long long>(total));
  return 0;
}

}  // namespace

Action register_generate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "Sample text from a GPT checkpoint");
  auto a = std::make_shared<GenerateArgs>();
  cmd->add_option("--checkpoint", a->checkpoint,
                  "A checkpoint file, or a run directory (its latest)")
      ->required();
  cmd->add_option("--prompt", a->prompt, "Text to continue")->capture_default_str();
  cmd->add_option("--length", a->length, "Bytes to generate (1 to 1000000)")
      ->check(decimal<int>(1, kMostGeneratedBytes))
      ->capture_default_str();
  cmd->add_option("--temperature", a->temperature, "Sampling temperature (0: greedy)")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "Sampling seed (an integer >= 0)")
      ->check(decimal<std::uint64_t>())
      ->capture_default_str();
  return [cmd, a]() -> int { return cmd->parsed() ? generate(*a) : -1; };
}

Action register_inspect_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("inspect", "List a checkpoint's tensors, formats, step and scaler state");
  auto path = std::make_shared<std::string>();
  cmd->add_option("checkpoint", *path, "A checkpoint file, or a run directory (its latest)")
      ->required();
  return [cmd, path]() -> int { return cmd->parsed() ? inspect(*path) : -1; };
}

}  // namespace mantissa::app
