#include "data_parallel.hpp"

#include "digest.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>

#include "mantissa/dist/sharding.hpp"
#include "mantissa/dist/step_agreement.hpp"
#include "mantissa/error.hpp"

namespace mantissa::train {
namespace {

// What `work` threw ("" when it succeeded).
std::string attempt(const std::function<void()>& work) {
  try {
    work();
    return "";
  } catch (const Error& e) {
    const std::string m = e.what();
    return m.empty() ? "an error without a message" : m;
  }
}

}  // namespace

DataParallel::DataParallel(const dist::Communicator& world, const config::DistConfig& config)
    : comm_(world), root_work_(world), config_(config) {
  comm_.set_timeout_seconds(config.timeout_seconds);
  root_work_.set_timeout_seconds(std::max(config.timeout_seconds, kRootWorkSeconds));
}

DataParallel::~DataParallel() = default;

tensor::BatchPart DataParallel::batch_part(std::int64_t global_batch) const {
  const dist::Shard s =
      dist::shard_batch(global_batch, rank(), size(), "trainer.fit.train_dataloader.batch_size");
  return {s.begin / s.count, size()};
}

void DataParallel::together(const std::function<void()>& work) const {
  if (!distributed()) {
    work();
    return;
  }
  dist::agree_on_success(comm_, attempt(work));
}

void DataParallel::root_first(const std::function<void()>& work) const {
  if (!distributed()) {
    work();
    return;
  }
  // Rank 0 works, then waits for the others, who only wait: its wait has the ordinary bound
  // (comm_), theirs the long one (a rank that died meanwhile is named within the dist
  // timeout, not after kRootWorkSeconds). Then the others work and everyone waits long.
  dist::agree_on_success(is_root() ? comm_ : root_work_, is_root() ? attempt(work) : "");
  dist::agree_on_success(root_work_, is_root() ? "" : attempt(work));
}

void DataParallel::on_root(const std::function<void()>& work) const {
  if (!distributed()) {
    work();
    return;
  }
  // As root_first's first half: only the others' wait is long.
  dist::agree_on_success(is_root() ? comm_ : root_work_, is_root() ? attempt(work) : "");
}

std::string DataParallel::from_root(const std::string& mine) const {
  if (!distributed()) return mine;
  const std::vector<std::vector<std::byte>> all =
      comm_.allgather_blobs(std::as_bytes(std::span(mine.data(), mine.size())));
  return std::string(reinterpret_cast<const char*>(all[0].data()), all[0].size());
}

void DataParallel::require_identical_state(const std::map<std::string, tensor::Tensor>& tensors,
                                           const std::map<std::string, std::string>& metadata,
                                           const std::string& what) const {
  if (!distributed()) return;
  detail::Digest d;
  for (const auto& [name, t] : tensors) {
    d.add(name.data(), name.size());
    const std::vector<float> v = t.to_vector();
    d.add(v.data(), v.size() * sizeof(float));
  }
  for (const auto& [key, value] : metadata) {
    d.add(key.data(), key.size());
    d.add(value.data(), value.size());
  }
  const std::uint64_t h = d.value();
  dist::require_identical(comm_, std::as_bytes(std::span(&h, 1)), what);
}

void DataParallel::require_identical_digest(std::uint64_t digest, const std::string& what) const {
  if (!distributed()) return;
  const std::vector<std::vector<std::byte>> all =
      comm_.allgather_blobs(std::as_bytes(std::span(&digest, 1)));
  for (std::size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    throw Error(comm_.where() + ": rank " + std::to_string(r) + " differs from rank 0 in " + what +
                " (compared by a 64-bit digest); start every rank with the same config, "
                "--set options and files");
  }
}

void DataParallel::attach(const std::vector<autograd::Variable>& params) {
  if (!distributed()) return;
  reducer_ = std::make_unique<dist::GradientReducer>(
      comm_, params,
      dist::ReducerOptions{.bucket_cap_bytes = config_.bucket_cap_bytes(),
                           .wire = config_.allreduce_dtype,
                           .average = false});
}

void DataParallel::backward(const autograd::Variable& root, bool last_of_step) {
  if (last_of_step && reducer_ && config_.overlap) {
    autograd::backward(root, 1.0f, reducer_->hook());
  } else {
    autograd::backward(root);
  }
}

void DataParallel::finish() {
  if (reducer_) reducer_->finish();
}

amp::StepAgreement DataParallel::step_agreement() const {
  if (!distributed()) return {};
  return [this](const amp::GradientFacts& mine) {
    // Every process holds the same summed gradients (replicated): the facts must agree, and
    // a process whose norm differs in any bit is an Error (the replicas diverged).
    const dist::StepDecision d =
        dist::agree_on_step(comm_, mine.finite, mine.sum_squares, dist::GradLayout::replicated);
    return amp::GradientFacts{d.finite, d.sum_squares};
  };
}

namespace {

// Every rank's vector (the same length on each), in rank order.
template <class T>
std::vector<std::vector<T>> gathered(const dist::Communicator& comm, const std::vector<T>& mine) {
  const std::vector<std::byte> all = comm.allgather(std::as_bytes(std::span(mine)));
  std::vector<std::vector<T>> out(static_cast<std::size_t>(comm.size()),
                                  std::vector<T>(mine.size()));
  for (std::size_t r = 0; r < out.size(); ++r) {
    std::memcpy(out[r].data(), all.data() + r * mine.size() * sizeof(T), mine.size() * sizeof(T));
  }
  return out;
}

}  // namespace

amp::Fp8Layers::Agreement DataParallel::fp8_agreement() const {
  if (!distributed()) return {};
  return [this](std::vector<float>& amax, std::vector<std::int64_t>& counts) {
    const auto amaxes = gathered(comm_, amax);
    const auto all_counts = gathered(comm_, counts);
    for (std::size_t i = 0; i < amax.size(); ++i) {
      for (const std::vector<float>& rank : amaxes) {
        const float a = rank[i];
        amax[i] = std::isfinite(a) && std::isfinite(amax[i])
                      ? std::max(amax[i], a)
                      : std::numeric_limits<float>::quiet_NaN();
      }
    }
    for (std::size_t i = 0; i < counts.size(); ++i) {
      counts[i] = 0;
      for (const std::vector<std::int64_t>& rank : all_counts) counts[i] += rank[i];
    }
  };
}

double DataParallel::mean(double value) const {
  if (!distributed()) return value;
  const std::vector<std::byte> all = comm_.allgather(std::as_bytes(std::span(&value, 1)));
  double sum = 0;
  for (int r = 0; r < size(); ++r) {
    double v = 0;
    std::memcpy(&v, all.data() + sizeof v * static_cast<std::size_t>(r), sizeof v);
    sum = r == 0 ? v : sum + v;
  }
  return sum / static_cast<double>(size());
}

bool DataParallel::any(bool flag) const {
  if (!distributed()) return flag;
  const std::uint8_t mine = flag ? 1 : 0;
  const std::vector<std::byte> all = comm_.allgather(std::as_bytes(std::span(&mine, 1)));
  for (std::byte b : all) {
    if (b != std::byte{0}) return true;
  }
  return false;
}

int DataParallel::first_nonzero(int value) const {
  if (!distributed()) return value;
  const std::vector<std::byte> all = comm_.allgather(std::as_bytes(std::span(&value, 1)));
  for (int r = 0; r < size(); ++r) {
    int v = 0;
    std::memcpy(&v, all.data() + sizeof v * static_cast<std::size_t>(r), sizeof v);
    if (v != 0) return v;
  }
  return 0;
}

const dist::ReducerStats* DataParallel::stats() const {
  return reducer_ ? &reducer_->stats() : nullptr;
}

}  // namespace mantissa::train
