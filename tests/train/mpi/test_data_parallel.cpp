// The data-parallel trainer under mpirun against the same trainer in one process: per-step
// losses in float32, the loss-scaling trajectory in float16, resumption with the same and with
// another number of processes, and a stop asked of one process only. Every rank runs both the
// job's trainer and a one-process trainer of its own (the reference).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mantissa/dist/step_agreement.hpp"
#include "mantissa/error.hpp"
#include "mantissa/train/trainer.hpp"
#include "tiny_run.hpp"
#include "world.hpp"

namespace mantissa::testing {
namespace {

namespace fs = std::filesystem;
using config::TrainerConfig;
using train::RunMode;
using train::Trainer;

// Rank 0's string on every rank.
std::string from_root(const std::string& mine) {
  const auto all = world().allgather_blobs(std::as_bytes(std::span(mine.data(), mine.size())));
  return std::string(reinterpret_cast<const char*>(all[0].data()), all[0].size());
}

// A directory every rank sees (rank 0 names and fills it), with a small text corpus.
struct SharedDir {
  fs::path dir;
  explicit SharedDir(const std::string& name) {
    dir = from_root(
        (fs::temp_directory_path() / ("mantissa_dp_" + name + "_" + std::to_string(::getpid())))
            .string());
    if (world().is_root()) {
      fs::remove_all(dir);
      fs::create_directories(dir);
      std::ofstream out(dir / "text.txt");
      for (int i = 0; i < 400; ++i)
        out << "line " << i << ": the quick brown fox jumps over the lazy dog\n";
    }
    world().barrier();
  }
  ~SharedDir() {
    world().barrier();
    if (world().is_root()) fs::remove_all(dir);
  }
  std::string text() const { return (dir / "text.txt").string(); }
  // A run directory of this rank's own (for the one-process references).
  std::string mine(const std::string& name) const {
    return (dir / (name + "-rank" + std::to_string(world().rank()))).string();
  }
};

// A two-layer GPT on the shared text; `precision` the precision block, `extra` more keys of
// trainer.init.
TrainerConfig tiny_gpt(const SharedDir& d, const std::string& run_dir, const std::string& precision,
                       const std::string& loop, const std::vector<std::string>& overrides = {}) {
  return config::parse_config(R"(
trainer:
  init:
    seed: 5
    model: {name: gpt, vocab_size: 256, max_position_embeddings: 16, hidden_size: 32,
            num_hidden_layers: 2, num_heads: 2, filter_size: 64, dropout_rate: 0.1}
    optimizer: {AdamW: {learning_rate: 3.0e-3}}
    schedulers:
      - CosineDecayLR: {initial_learning_rate: 3.0e-3, end_learning_rate: 0.0, total_iters: 40}
    precision: )" + precision + R"(
    loop: )" + loop + R"(
    checkpoint: {dir: )" + run_dir +
                                  R"(, keep: 10}
    logging: {log_steps: 1}
    dist: {timeout_seconds: 20}
  fit:
    train_dataloader: {dataset: text, path: )" +
                                  d.text() +
                                  R"(, batch_size: 4, context: 16}
)",
                              overrides, "tiny_gpt");
}

std::vector<std::byte> bytes_of(const std::string& s) {
  const auto b = std::as_bytes(std::span(s.data(), s.size()));
  return {b.begin(), b.end()};
}

std::vector<std::uint32_t> bits(const tensor::Tensor& t) {
  const std::vector<float> v = t.to_vector();
  std::vector<std::uint32_t> b(v.size());
  std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
  return b;
}

// Every parameter and optimizer state, and the given metadata, the same bytes on every rank.
void expect_same_state_on_every_rank(const Trainer& t, const std::string& when) {
  std::string blob;
  for (const auto& [name, tensor] : t.state_tensors()) {
    const std::vector<std::uint32_t> b = bits(tensor);
    blob += name;
    blob.append(reinterpret_cast<const char*>(b.data()), b.size() * sizeof(std::uint32_t));
  }
  const auto meta = t.state_metadata();
  for (const char* key : {"global_step", "optimizer_step", "train_loader", "rng", "scaler"}) {
    if (meta.count(key) != 0) blob += meta.at(key);
  }
  EXPECT_NO_THROW(dist::require_identical(world(), bytes_of(blob), "the state " + when));
}

// The per-step losses of a run directory's metrics (log_steps 1).
std::map<std::int64_t, double> losses(const std::string& run_dir) {
  std::map<std::int64_t, double> out;
  std::ifstream in(fs::path(run_dir) / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.contains("step")) out[j.at("step").get<std::int64_t>()] = j.at("loss").get<double>();
  }
  return out;
}

double relative(double a, double b) {
  return std::abs(a - b) / std::max(std::abs(b), 1e-30);
}

const char* kFloat32 = "{enabled: false}";
const char* kFloat16Overflowing =
    "{fp16_type: float16, loss_scaling_factor: dynamic, initial_loss_scale: 1.0e9, "
    "max_loss_scale: 1.0e9, steps_per_increase: 3, max_gradient_norm: 1.0}";

// 20 steps in float32 (dropout on), 2 ranks against 1 process on the same global batch: the
// per-step losses agree within 1e-5 relative. They are not expected to be the same bits: each
// rank sums its half of the batch in its weight-gradient products, and the halves are added
// afterwards (docs/distributed.md).
TEST(DataParallelTrainer, Float32LossesMatchOneProcessFor20Steps) {
  // One bucket, one all-reduce after each backward; then gradient accumulation with buckets of
  // 4 KiB (19 of them) started during the last backward.
  const std::vector<std::vector<std::string>> variants = {
      {"1", "trainer.init.dist.overlap=false"}, {"2", "trainer.init.dist.bucket_cap_mb=0.004"}};
  for (const auto& v : variants) {
    const std::string& accum = v[0];
    SharedDir d("f32");
    const std::string loop = "{max_steps: 20, grad_accum_steps: " + accum + "}";
    Trainer job(tiny_gpt(d, (d.dir / "job").string(), kFloat32, loop, {v[1]}),
                {nullptr, {}, world()});
    Trainer one(tiny_gpt(d, d.mine("one"), kFloat32, loop));
    ASSERT_EQ(job.ranks(), world().size());
    ASSERT_EQ(one.ranks(), 1);
    double worst = 0;
    int identical = 0;
    std::vector<double> job_losses;
    for (int s = 0; s < 20; ++s) {
      const double a = job.train_step().loss, b = one.train_step().loss;
      job_losses.push_back(a);
      EXPECT_LE(relative(a, b), 1e-5) << "step " << s << ": " << a << " vs " << b;
      worst = std::max(worst, relative(a, b));
      identical += a == b;
    }
    EXPECT_LT(job_losses.back(), job_losses.front() - 0.5) << "the model learns";
    const dist::ReducerStats& st = *job.reducer_stats();
    if (accum == "1") {
      EXPECT_EQ(st.buckets, 1);
      EXPECT_EQ(st.started_during_backward, 0);  // overlap off: all after the backward
    } else {
      EXPECT_GT(st.buckets, 10);
      EXPECT_GT(st.started_during_backward, 0);
    }
    const auto* raw = reinterpret_cast<const char*>(job_losses.data());
    EXPECT_NO_THROW(dist::require_identical(
        world(), bytes_of(std::string(raw, job_losses.size() * sizeof(double))),
        "the logged losses"));
    expect_same_state_on_every_rank(job, "after 20 steps");
    if (world().is_root()) {
      std::printf(
          "grad_accum_steps %s, %lld buckets: largest relative loss difference %.3g, %d of 20 "
          "steps "
          "bit-identical\n",
          accum.c_str(), static_cast<long long>(job.reducer_stats()->buckets), worst, identical);
    }
  }
}

// float16 with dynamic loss scaling from 1e9: the first steps overflow and the scale halves
// until it does not, then grows every 3 steps and overflows again. Every rank skips the same
// steps and holds the same scaler state after every step, and the trajectory (scale,
// counters, skipped steps) is the one process's, step by step.
TEST(DataParallelTrainer, Float16SkipsTheSameStepsAsOneProcessWithTheSameScale) {
  SharedDir d("f16");
  const char* loop = "{max_steps: 24}";
  Trainer job(tiny_gpt(d, (d.dir / "job").string(), kFloat16Overflowing, loop),
              {nullptr, {}, world()});
  Trainer one(tiny_gpt(d, d.mine("one"), kFloat16Overflowing, loop));
  std::int64_t skipped = 0;
  std::vector<double> scales;
  for (int s = 0; s < 24; ++s) {
    const train::StepResult a = job.train_step(), b = one.train_step();
    scales.push_back(a.report.loss_scale);
    const std::string state = job.state_metadata().at("scaler");
    EXPECT_NO_THROW(dist::require_identical(world(), bytes_of(state),
                                            "the scaler state after step " + std::to_string(s)));
    EXPECT_EQ(state, one.state_metadata().at("scaler")) << "step " << s;
    EXPECT_EQ(a.report.stepped, b.report.stepped) << "step " << s;
    EXPECT_EQ(a.report.loss_scale, b.report.loss_scale) << "step " << s;
    skipped = a.report.skipped_steps;
  }
  EXPECT_GE(skipped, 3) << "an initial scale of 1e9 overflows float16";
  bool grew = false;
  for (std::size_t i = 1; i < scales.size(); ++i) grew = grew || scales[i] > scales[i - 1];
  EXPECT_TRUE(grew) << "the scale grows back every 3 steps without overflow";
  EXPECT_LT(nlohmann::json::parse(job.state_metadata().at("scaler")).at("loss_scale").get<double>(),
            1e9);
  expect_same_state_on_every_rank(job, "after 24 float16 steps");
}

// fp8 linear layers (delayed scaling) and bfloat16 master weights with stochastic rounding:
// the ranks combine their amaxes (max) and counts (sum) before the scales move on, so every
// rank's scales follow the whole global batch, as one process's do; the bfloat16 weights'
// gradients are summed like float32 ones. After every step the whole state (bfloat16 weights,
// optimizer state, fp8 histories and scales) is the same bytes on every rank.
TEST(DataParallelTrainer, Fp8ScalesAndBfloat16WeightsFollowTheGlobalBatch) {
  SharedDir d("fp8");
  const char* precision =
      "{fp16_type: bfloat16, fp8: {enabled: true}, master_weights: bfloat16_stochastic}";
  const char* loop = "{max_steps: 10}";
  Trainer job(tiny_gpt(d, (d.dir / "job").string(), precision, loop), {nullptr, {}, world()});
  Trainer one(tiny_gpt(d, d.mine("one"), precision, loop));
  double worst = 0;
  for (int s = 0; s < 10; ++s) {
    const double a = job.train_step().loss, b = one.train_step().loss;
    worst = std::max(worst, relative(a, b));
    expect_same_state_on_every_rank(job, "after fp8 step " + std::to_string(s));
    if (s == 0) {  // the same weights so far: the same amaxes, hence the same scales
      const auto mine = job.state_tensors(), theirs = one.state_tensors();
      int fp8_tensors = 0;
      for (const auto& [name, t] : mine) {
        if (!name.starts_with("fp8.")) continue;
        ++fp8_tensors;
        EXPECT_EQ(bits(t), bits(theirs.at(name))) << name;
      }
      EXPECT_GT(fp8_tensors, 0);
    }
  }
  // Not float32's agreement: bfloat16 gradients are rounded once per rank and once more after
  // the sum (one process rounds once), and fp8 rounding magnifies a last-bit difference in a
  // weight into a neighbouring fp8 value.
  EXPECT_LT(worst, 1e-2);
  if (world().is_root()) {
    std::printf("fp8 + bfloat16 weights: largest relative loss difference %.3g\n", worst);
  }
}

// 12 steps straight vs 6, a checkpoint, a fresh job resuming from it, 6 more: the same bits
// (parameters, optimizer state, scaler, loader position, dropout stream) on every rank.
TEST(DataParallelTrainer, ResumeWithTheSameNumberOfRanksIsBitExact) {
  SharedDir d("resume");
  const std::string a = (d.dir / "a").string(), b = (d.dir / "b").string();
  const auto cfg = [&](const std::string& dir, int steps) {
    return tiny_gpt(d, dir, kFloat16Overflowing,
                    "{max_steps: " + std::to_string(steps) + ", grad_accum_steps: 2}");
  };
  Trainer straight(cfg(a, 12), {nullptr, {}, world()});
  const train::RunSummary sa = straight.run(RunMode::train);
  EXPECT_GT(sa.skipped_steps, 0);
  {
    Trainer first(cfg(b, 6), {nullptr, {}, world()});
    first.run(RunMode::train);
  }
  Trainer second(cfg(b, 12), {nullptr, {}, world()});
  const train::RunSummary sb = second.run(RunMode::train, train::ResumeFrom::latest());
  EXPECT_EQ(sb.global_step, 12);
  const auto ta = straight.state_tensors(), tb = second.state_tensors();
  ASSERT_EQ(ta.size(), tb.size());
  for (const auto& [name, t] : ta) EXPECT_EQ(bits(t), bits(tb.at(name))) << name;
  const auto ma = straight.state_metadata(), mb = second.state_metadata();
  for (const char* key : {"global_step", "optimizer_step", "scaler", "train_loader", "rng"}) {
    EXPECT_EQ(ma.at(key), mb.at(key)) << key;
  }
  expect_same_state_on_every_rank(second, "after resuming");
  EXPECT_EQ(mb.at("dist_ranks"), std::to_string(world().size()));
}

// A checkpoint of the job resumed by one process: the loader position, the dropout stream
// and the step carry over exactly; the following losses are those of a run that was one
// process throughout, within float32 rounding.
TEST(DataParallelTrainer, ResumeWithAnotherNumberOfProcessesCarriesOn) {
  SharedDir d("renumber");
  const std::string job_dir = (d.dir / "job").string();
  const auto cfg = [&](const std::string& dir, int steps) {
    return tiny_gpt(d, dir, kFloat32, "{max_steps: " + std::to_string(steps) + "}");
  };
  {
    Trainer job(cfg(job_dir, 6), {nullptr, {}, world()});
    job.run(RunMode::train);
  }
  Trainer straight(cfg(d.mine("straight"), 6));
  straight.run(RunMode::train);
  // Every rank resumes the job's checkpoint on its own, as one process.
  const std::string ckpt = (fs::path(job_dir) / "ckpt-00000006.safetensors").string();
  train::Recorder rec;
  Trainer resumed(cfg(d.mine("resumed"), 12), {&rec, {}, {}});
  Trainer continued(cfg(d.mine("straight"), 12));
  resumed.run(RunMode::train, train::ResumeFrom::checkpoint(ckpt));
  continued.run(RunMode::train, train::ResumeFrom::latest());
  EXPECT_TRUE(rec.said("the checkpoint was written by 2 processes, this run has 1"));
  const auto mr = resumed.state_metadata(), mc = continued.state_metadata();
  for (const char* key : {"global_step", "optimizer_step", "train_loader", "rng"}) {
    EXPECT_EQ(mr.at(key), mc.at(key)) << key;
  }
  const std::map<std::int64_t, double> got = losses(d.mine("resumed")),
                                       want = losses(d.mine("straight"));
  ASSERT_EQ(got.size(), 6u);
  for (const auto& [step, loss] : got) {
    ASSERT_EQ(want.count(step), 1u) << step;
    EXPECT_LE(relative(loss, want.at(step)), 1e-5) << "step " << step;
  }
}

// Ranks that restore different bytes (a run directory that is not shared, a stale copy) stop
// with an error naming the rank that differs.
TEST(DataParallelTrainer, RanksThatRestoreDifferentStatesAreNamed) {
  SharedDir d("differ");
  const std::string dir = (d.dir / "job").string();
  const auto cfg = [&](int steps) {
    return tiny_gpt(d, dir, kFloat32, "{max_steps: " + std::to_string(steps) + "}",
                    {"trainer.init.checkpoint.steps=3"});
  };
  {
    Trainer first(cfg(6), {nullptr, {}, world()});
    first.run(RunMode::train);
  }
  Trainer t(cfg(9), {nullptr, {}, world()});
  const std::string mine = (fs::path(dir) / (world().rank() == 1 ? "ckpt-00000003.safetensors"
                                                                 : "ckpt-00000006.safetensors"))
                               .string();
  try {
    t.run(RunMode::train, train::ResumeFrom::checkpoint(mine));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a mismatch across ranks in the state restored from"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 1 differs from rank 0"), std::string::npos)
        << e.what();
  }
}

// A stop asked of rank 1 only: every rank stops after the same step, and rank 0 writes the
// checkpoint of that step.
TEST(DataParallelTrainer, AStopAskedOfOneRankStopsEveryRankAtTheSameStep) {
  SharedDir d("stop");
  const std::string dir = (d.dir / "job").string();
  {
    Trainer first(tiny_gpt(d, dir, kFloat32, "{max_steps: 3}"), {nullptr, {}, world()});
    first.run(RunMode::train);
  }
  Trainer t(tiny_gpt(d, dir, kFloat32, "{max_steps: 50}"), {nullptr, {}, world()});
  if (world().rank() == 1) t.request_stop();
  const train::RunSummary s = t.run(RunMode::train, train::ResumeFrom::latest());
  EXPECT_TRUE(s.interrupted);
  EXPECT_EQ(s.global_step, 3);
  EXPECT_EQ(s.last_checkpoint, (fs::path(dir) / "ckpt-00000003.safetensors").string());
  EXPECT_TRUE(fs::exists(s.last_checkpoint));
}

}  // namespace
}  // namespace mantissa::testing
