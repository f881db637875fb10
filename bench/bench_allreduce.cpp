// Gradient all-reduce time per step for GPT-ref's gradients (DESIGN.md section 8: 10.9M
// parameters in their real shapes and order), over float32 and bfloat16 wires, for the
// scaling model of docs/distributed.md. Run under mpirun; rank 0 prints.
//   OMP_NUM_THREADS=1 mpirun -np 2 --oversubscribe --allow-run-as-root
//       build/bench/bench_allreduce [--iterations 20] [--cap-mib 25] [--training-steps 3]
// all-reduce: every bucket started at once after a barrier (nothing to overlap with); the
// time of a step is the slowest rank's. --training-steps N also times N GPT-ref steps
// (forward, backward, all-reduce; global batch 8 x 256 tokens split across the ranks) with the
// buckets started during the backward (overlapped) and with one all-reduce after it.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mantissa/dist/gradient_reducer.hpp"
#include "mantissa/dist/runtime.hpp"
#include "mantissa/dist/sharding.hpp"
#include "mantissa/error.hpp"
#include "mantissa/nn/models.hpp"
#include "mantissa/tensor/random.hpp"

using namespace mantissa;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The slowest rank's time.
double slowest(const dist::Communicator& world, double mine) {
  const std::vector<std::byte> all = world.allgather(std::as_bytes(std::span(&mine, 1)));
  std::vector<double> t(static_cast<std::size_t>(world.size()));
  std::memcpy(t.data(), all.data(), all.size());
  return *std::max_element(t.begin(), t.end());
}

struct Summary {
  double median = 0, min = 0;
};
Summary summarize(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front()};
}

void time_allreduce(dist::Communicator& world, nn::Gpt& model, dist::WireFormat wire,
                    std::int64_t cap, int iterations) {
  dist::GradientReducer reducer(world, model.parameters(), {.bucket_cap_bytes = cap, .wire = wire});
  tensor::Rng rng(static_cast<std::uint64_t>(world.rank()) + 1);
  std::vector<double> times;
  for (int i = -2; i < iterations; ++i) {  // two warm-up steps
    for (autograd::Variable& p : model.parameters()) {
      tensor::Tensor g = tensor::Tensor::empty(p.shape());
      rng.fill_normal(g, 0.0f, 1e-3f);
      p.mutable_grad() = g;
    }
    world.barrier();
    const Clock::time_point t0 = Clock::now();
    reducer.finish();
    const double t = slowest(world, seconds_since(t0));
    if (i >= 0) times.push_back(t);
  }
  const Summary s = summarize(times);
  const dist::ReducerStats& st = reducer.stats();
  if (world.is_root()) {
    std::printf(
        "all-reduce  wire %-8s  %lld buckets  %6.1f MB sent/rank  median %7.2f ms  min %7.2f ms"
        "  (%5.2f GB/s sent per rank at the median)\n",
        std::string(name_of(dist::kWireFormatNames, wire)).c_str(),
        static_cast<long long>(st.buckets), static_cast<double>(st.bytes_sent_per_step) / 1e6,
        s.median * 1e3, s.min * 1e3, static_cast<double>(st.bytes_sent_per_step) / s.median / 1e9);
  }
}

void time_training(dist::Communicator& world, nn::Gpt& model, dist::WireFormat wire,
                   std::int64_t cap, int steps) {
  const std::int64_t t = model.config().max_position_embeddings;
  const dist::Shard shard = dist::shard_batch(8, world.rank(), world.size());
  tensor::Rng rng(42);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(8 * (t + 1)));
  for (auto& id : ids) id = static_cast<std::int32_t>(rng.next_u64() % 256);
  std::vector<std::int32_t> x, y;
  for (std::int64_t b = shard.begin; b < shard.begin + shard.count; ++b) {
    const auto row = ids.begin() + b * (t + 1);
    x.insert(x.end(), row, row + t);
    y.insert(y.end(), row + 1, row + t + 1);
  }
  dist::GradientReducer reducer(world, model.parameters(), {.bucket_cap_bytes = cap, .wire = wire});
  for (const bool overlapped : {true, false}) {
    std::vector<double> step_times, finish_times;
    for (int i = -1; i < steps; ++i) {
      for (autograd::Variable& p : model.parameters()) p.mutable_grad() = tensor::Tensor();
      world.barrier();
      const Clock::time_point t0 = Clock::now();
      const autograd::Variable loss = model.loss(x, y, shard.count, t);
      if (overlapped) {
        autograd::backward(loss, 1.0f, reducer.hook());
      } else {
        autograd::backward(loss);
      }
      reducer.finish();
      const double step = slowest(world, seconds_since(t0));
      const double finish = slowest(world, reducer.stats().finish_seconds);
      if (i >= 0) {
        step_times.push_back(step);
        finish_times.push_back(finish);
      }
    }
    const Summary s = summarize(step_times), f = summarize(finish_times);
    if (world.is_root()) {
      std::printf(
          "training step  wire %-8s  %-26s  step median %7.1f ms  all-reduce wait after the "
          "backward median %6.1f ms (%lld of %lld buckets started during the backward)\n",
          std::string(name_of(dist::kWireFormatNames, wire)).c_str(),
          overlapped ? "buckets during backward" : "one all-reduce after it", s.median * 1e3,
          f.median * 1e3, static_cast<long long>(reducer.stats().started_during_backward),
          static_cast<long long>(reducer.stats().buckets));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  dist::Runtime runtime(argc, argv);
  CLI::App app("GPT-ref gradient all-reduce time per step");
  int iterations = 20, training_steps = 0;
  double cap_mib = 25;
  app.add_option("--iterations", iterations, "timed all-reduce steps per wire format");
  app.add_option("--cap-mib", cap_mib, "bucket cap in MiB of float32 gradients");
  app.add_option("--training-steps", training_steps, "also time GPT-ref training steps");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  dist::Communicator& world = runtime.world();
  try {
    world.set_timeout_seconds(120);
    nn::Gpt model(nn::GptConfig{}, 1);
    const auto cap = static_cast<std::int64_t>(cap_mib * 1024 * 1024);
    if (world.is_root()) {
      std::printf("GPT-ref gradients: %lld parameters in %zu tensors; %d ranks; cap %.3g MiB\n",
                  static_cast<long long>(model.parameter_count()), model.parameters().size(),
                  world.size(), cap_mib);
    }
    for (const dist::WireFormat wire : {dist::WireFormat::float32, dist::WireFormat::bfloat16}) {
      time_allreduce(world, model, wire, cap, iterations);
    }
    for (const dist::WireFormat wire : {dist::WireFormat::float32, dist::WireFormat::bfloat16}) {
      if (training_steps > 0) time_training(world, model, wire, cap, training_steps);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_allreduce: error: %s\n", e.what());
    runtime.abort(1);
  }
  return 0;
}
