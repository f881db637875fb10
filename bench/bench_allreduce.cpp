// Gradient all-reduce time per step for GPT-ref's gradients (docs/design.md section 8: 10.9M
// parameters in their real shapes and order), over float32 and bfloat16 wires, for the
// scaling model of docs/distributed.md. Run under mpirun; rank 0 prints.
//   OMP_NUM_THREADS=1 mpirun -np 2 --oversubscribe --allow-run-as-root
//       build/bench/bench_allreduce [--iterations 20] [--cap-mib 1,4,25] [--training-steps 3]
// all-reduce: every bucket started at once after a barrier (nothing to overlap with); a step
// takes the slowest rank's time. --training-steps N also times N GPT-ref steps (forward,
// backward, all-reduce; global batch 8 x 256 tokens split across the ranks) with the buckets
// started during the backward (overlapped) and with one all-reduce after it. The
// configurations being compared take turns step by step, so a load that changes during the
// run (a shared machine) weighs on all of them alike.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "mantissa/dist/gradient_reducer.hpp"
#include "mantissa/dist/reduction.hpp"
#include "mantissa/dist/runtime.hpp"
#include "mantissa/dist/sharding.hpp"
#include "mantissa/error.hpp"
#include "mantissa/nn/models.hpp"
#include "mantissa/tensor/random.hpp"

using namespace mantissa;
using Clock = std::chrono::steady_clock;

namespace {

constexpr dist::WireFormat kWires[] = {dist::WireFormat::float32, dist::WireFormat::bfloat16};

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

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::string wire_name(dist::WireFormat wire) {
  return std::string(name_of(dist::kWireFormatNames, wire));
}

using Reducers = std::vector<std::unique_ptr<dist::GradientReducer>>;
Reducers make_reducers(const dist::Communicator& world, nn::Gpt& model, std::int64_t cap) {
  Reducers r;
  for (const dist::WireFormat wire : kWires) {
    r.push_back(std::make_unique<dist::GradientReducer>(
        world, model.parameters(), dist::ReducerOptions{.bucket_cap_bytes = cap, .wire = wire}));
  }
  return r;
}

void time_allreduce(const dist::Communicator& world, nn::Gpt& model, double cap_mib,
                    int iterations) {
  Reducers reducers = make_reducers(world, model, static_cast<std::int64_t>(cap_mib * 1048576));
  tensor::Rng rng(static_cast<std::uint64_t>(world.rank()) + 1);
  for (autograd::Variable& p : model.parameters()) {
    tensor::Tensor g = tensor::Tensor::empty(p.shape());
    rng.fill_uniform(g, -1e-3f, 1e-3f);
    p.mutable_grad() = g;
  }
  std::vector<std::vector<double>> times(reducers.size());
  for (int i = -2; i < iterations; ++i) {  // two warm-up steps
    for (std::size_t w = 0; w < reducers.size(); ++w) {
      world.barrier();
      const Clock::time_point t0 = Clock::now();
      reducers[w]->finish();
      const double t = slowest(world, seconds_since(t0));
      if (i >= 0) times[w].push_back(t);
    }
  }
  for (std::size_t w = 0; w < reducers.size(); ++w) {
    const dist::ReducerStats& st = reducers[w]->stats();
    const double m = median(times[w]);
    if (world.is_root()) {
      std::printf(
          "all-reduce     cap %4.3g MiB  wire %-8s  %3lld buckets  %5.1f MB sent/rank  median "
          "%7.2f ms  min %7.2f ms\n",
          cap_mib, wire_name(kWires[w]).c_str(), static_cast<long long>(st.buckets),
          static_cast<double>(st.bytes_sent_per_step) / 1e6, m * 1e3,
          *std::min_element(times[w].begin(), times[w].end()) * 1e3);
    }
  }
}

// The work a rank does besides moving bytes, on one process: the gradients onto the wire
// (pack), its part of the reduction (N contributions of 1/N of the elements), and the result
// back into the gradients (unpack).
void time_local_work(const dist::Communicator& world, std::int64_t numel) {
  const int n = world.size();
  std::vector<float> grads(static_cast<std::size_t>(numel), 1e-3f);
  for (const dist::WireFormat wire : kWires) {
    const int bytes = dist::wire_bytes(wire);
    std::vector<std::byte> packed(static_cast<std::size_t>(numel * bytes));
    const std::int64_t part = numel / n;
    std::vector<std::vector<std::byte>> contributions(
        static_cast<std::size_t>(n),
        std::vector<std::byte>(static_cast<std::size_t>(part * bytes)));
    std::vector<const void*> pointers;
    for (const auto& c : contributions) pointers.push_back(c.data());
    std::vector<double> times;
    for (int i = 0; i < 10; ++i) {
      const Clock::time_point t0 = Clock::now();
      dist::encode_wire(grads.data(), numel, wire, packed.data());
      dist::average_in_rank_order(pointers, part, wire, packed.data());
      dist::decode_wire(packed.data(), numel, wire, grads.data());
      times.push_back(seconds_since(t0));
    }
    std::printf("local work     wire %-8s  pack + reduce 1/%d + unpack  median %7.2f ms (rank 0)\n",
                wire_name(wire).c_str(), n, median(times) * 1e3);
  }
}

void time_training(const dist::Communicator& world, nn::Gpt& model, double cap_mib, int steps) {
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
  Reducers reducers = make_reducers(world, model, static_cast<std::int64_t>(cap_mib * 1048576));
  // Configuration c: wire c / 2, overlapped when c is even.
  std::vector<std::vector<double>> step_times(4), wait_times(4);
  for (int i = -1; i < steps; ++i) {
    for (std::size_t c = 0; c < 4; ++c) {
      dist::GradientReducer& reducer = *reducers[c / 2];
      for (autograd::Variable& p : model.parameters()) p.mutable_grad() = tensor::Tensor();
      world.barrier();
      const Clock::time_point t0 = Clock::now();
      const autograd::Variable loss = model.loss(x, y, shard.count, t);
      if (c % 2 == 0) {
        autograd::backward(loss, 1.0f, reducer.hook());
      } else {
        autograd::backward(loss);
      }
      reducer.finish();
      const double step = slowest(world, seconds_since(t0));
      const double wait = slowest(world, reducer.stats().finish_seconds);
      if (i >= 0) {
        step_times[c].push_back(step);
        wait_times[c].push_back(wait);
      }
    }
  }
  for (std::size_t c = 0; c < 4 && world.is_root(); ++c) {
    std::printf(
        "training step  cap %4.3g MiB  wire %-8s  %-25s  step median %7.1f ms  wait in finish() "
        "median %6.1f ms\n",
        cap_mib, wire_name(kWires[c / 2]).c_str(),
        c % 2 == 0 ? "buckets during backward" : "one all-reduce after it",
        median(step_times[c]) * 1e3, median(wait_times[c]) * 1e3);
  }
}

}  // namespace

int main(int argc, char** argv) {
  dist::Runtime runtime(argc, argv);
  CLI::App app("GPT-ref gradient all-reduce time per step");
  int iterations = 20, training_steps = 0;
  std::vector<double> caps_mib = {25};
  app.add_option("--iterations", iterations, "timed all-reduce steps per configuration");
  app.add_option("--cap-mib", caps_mib, "bucket caps in MiB of float32 gradients")->delimiter(',');
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
    if (world.is_root()) {
      std::printf("GPT-ref gradients: %lld parameters in %zu tensors; %d ranks\n",
                  static_cast<long long>(model.parameter_count()), model.parameters().size(),
                  world.size());
    }
    for (const double cap : caps_mib) time_allreduce(world, model, cap, iterations);
    world.barrier();
    if (world.is_root()) time_local_work(world, model.parameter_count());
    world.barrier();
    if (training_steps > 0) {
      for (const double cap : caps_mib) time_training(world, model, cap, training_steps);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_allreduce: error: %s\n", e.what());
    runtime.abort(1);
  }
  return 0;
}
