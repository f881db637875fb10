#include "mantissa/dist/gradient_reducer.hpp"

#include <chrono>
#include <climits>
#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

#include "dist/mpi_comm.hpp"
#include "mantissa/dist/step_agreement.hpp"
#include "mantissa/error.hpp"

namespace mantissa::dist {

using autograd::Variable;
using tensor::Tensor;

namespace {

// What a request of a bucket is, in its label: bucket * kKinds + kind.
enum Kind : int { kContribution = 0, kResult = 1, kSend = 2, kKinds = 3 };

// The bytes every rank must agree on: the options and each parameter's size.
std::vector<std::int64_t> layout_signature(const std::vector<std::int64_t>& numels,
                                           const ReducerOptions& options) {
  std::vector<std::int64_t> s{options.bucket_cap_bytes, static_cast<std::int64_t>(options.wire),
                              options.average ? 1 : 0};
  s.insert(s.end(), numels.begin(), numels.end());
  return s;
}

}  // namespace

struct GradientReducer::State {
  struct BucketState {
    std::vector<std::byte> send;    // this rank's gradients, in the wire format
    std::vector<std::byte> result;  // the averaged bucket, in the wire format
    std::vector<std::byte> parts;   // the other ranks' contributions to this rank's part
    Range mine;                     // this rank's part of the bucket
    std::size_t ready = 0;          // parameters whose gradient is final
    bool started = false, reduced = false, complete = false;
    int contributions_left = 0, results_left = 0, sends_left = 0;
  };

  Communicator comm;
  ReducerOptions options;
  std::vector<Variable> params;
  std::unordered_map<const void*, std::size_t> index;
  BucketPlan plan;
  std::vector<BucketState> buckets;
  std::vector<bool> is_final;  // per parameter, this step
  detail::RequestSet requests;
  ReducerStats stats;
  std::int64_t complete_count = 0;
  std::int64_t started_by_hook = 0;  // this step
  MPI_Datatype type = MPI_FLOAT;
  int bytes = 4;

  std::byte* at(std::vector<std::byte>& buffer, std::int64_t element) {
    return buffer.data() + element * bytes;
  }
  int tag(std::size_t b, Kind k) const {
    return detail::kFirstBucketTag + static_cast<int>(b) * 2 + (k == kContribution ? 0 : 1);
  }
  int label(std::size_t b, Kind k) const { return static_cast<int>(b) * kKinds + k; }
  std::byte* part_slot(BucketState& s, int peer) {
    const int slot = peer < comm.rank() ? peer : peer - 1;
    return at(s.parts, slot * s.mine.size());
  }

  void start(std::size_t b);
  void reduce(std::size_t b);
  void on_done(int label);
  void unpack(std::size_t b);
  bool progress() {
    return requests.test(comm, [this](int l) { on_done(l); });
  }
  std::string stalled() const;
};

void GradientReducer::State::start(std::size_t b) {
  BucketState& s = buckets[b];
  const Bucket& bucket = plan.buckets[b];
  for (std::size_t j = 0; j < bucket.params.size(); ++j) {
    const Variable& p = params[bucket.params[j]];
    std::byte* dst = at(s.send, bucket.offsets[j]);
    const std::int64_t n = p.value().numel();
    if (!p.grad().defined()) {
      std::memset(dst, 0, static_cast<std::size_t>(n * bytes));
      continue;
    }
    // float32 gradients as they are; bfloat16 ones (of bfloat16 weights) decoded exactly.
    const Tensor g = p.grad().to(numerics::Format::float32);
    encode_wire(g.f32(), n, options.wire, dst);
  }
  s.started = true;
  const int n = comm.size(), me = comm.rank();
  MPI_Comm c = comm.impl()->comm;
  s.contributions_left = s.results_left = n - 1;
  s.sends_left = 2 * (n - 1);
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    const Range theirs = part_of(bucket.numel, n, p);
    requests.recv(part_slot(s, p), static_cast<int>(s.mine.size()), type, p, tag(b, kContribution),
                  c, label(b, kContribution), comm);
    requests.recv(at(s.result, theirs.begin), static_cast<int>(theirs.size()), type, p,
                  tag(b, kResult), c, label(b, kResult), comm);
  }
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    const Range theirs = part_of(bucket.numel, n, p);
    requests.send(at(s.send, theirs.begin), static_cast<int>(theirs.size()), type, p,
                  tag(b, kContribution), c, label(b, kSend), comm);
  }
}

void GradientReducer::State::reduce(std::size_t b) {
  BucketState& s = buckets[b];
  const int n = comm.size(), me = comm.rank();
  std::vector<const void*> contributions(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    contributions[static_cast<std::size_t>(r)] =
        r == me ? at(s.send, s.mine.begin) : part_slot(s, r);
  }
  if (options.average) {
    average_in_rank_order(contributions, s.mine.size(), options.wire, at(s.result, s.mine.begin));
  } else {
    sum_in_rank_order(contributions, s.mine.size(), options.wire, at(s.result, s.mine.begin));
  }
  s.reduced = true;
  MPI_Comm c = comm.impl()->comm;
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    requests.send(at(s.result, s.mine.begin), static_cast<int>(s.mine.size()), type, p,
                  tag(b, kResult), c, label(b, kSend), comm);
  }
}

void GradientReducer::State::on_done(int l) {
  const std::size_t b = static_cast<std::size_t>(l / kKinds);
  BucketState& s = buckets[b];
  switch (static_cast<Kind>(l % kKinds)) {
    case kContribution:
      if (--s.contributions_left == 0) reduce(b);
      break;
    case kResult:
      --s.results_left;
      break;
    default:
      --s.sends_left;
      break;
  }
  if (s.reduced && s.results_left == 0 && s.sends_left == 0 && !s.complete) unpack(b);
}

void GradientReducer::State::unpack(std::size_t b) {
  BucketState& s = buckets[b];
  const Bucket& bucket = plan.buckets[b];
  for (std::size_t j = 0; j < bucket.params.size(); ++j) {
    Variable& p = params[bucket.params[j]];
    Tensor& g = p.mutable_grad();
    if (!g.defined()) {  // the format autograd gives this leaf's gradients
      const bool bf16 = p.value().format() == numerics::Format::bfloat16;
      g = Tensor::zeros(p.shape()).to(bf16 ? numerics::Format::bfloat16
                                           : numerics::Format::float32);
    }
    const std::byte* src = at(s.result, bucket.offsets[j]);
    if (g.is_contiguous() && g.format() == numerics::Format::float32) {
      decode_wire(src, g.numel(), options.wire, g.f32());
    } else {  // a view, or bfloat16: decoded, then stored (rounded to nearest-even)
      Tensor t = Tensor::empty(p.shape());
      decode_wire(src, t.numel(), options.wire, t.f32());
      g.copy_from(t);
    }
  }
  s.complete = true;
  ++complete_count;
}

std::string GradientReducer::State::stalled() const {
  std::string incomplete;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    if (!buckets[b].complete) incomplete += (incomplete.empty() ? "" : ", ") + std::to_string(b);
  }
  return fmt::format(
      "no message for {:g} s in the gradient all-reduce of step {}: still waiting for {} (dead, "
      "hung or failed); incomplete buckets: {} (of {})",
      comm.timeout_seconds(), stats.steps, detail::ranks_text(requests.waiting_for()), incomplete,
      buckets.size());
}

GradientReducer::GradientReducer(const Communicator& comm, const std::vector<Variable>& params,
                                 ReducerOptions options)
    : state_(std::make_unique<State>()) {
  State& st = *state_;
  st.options = options;
  std::vector<std::int64_t> numels;
  for (const Variable& p : params) {
    if (!p.defined()) throw Error(comm.where() + ": the reducer was given an undefined parameter");
    if (!st.index.emplace(p.id(), st.params.size()).second) continue;  // a tied weight
    st.params.push_back(p);
    numels.push_back(p.value().numel());
  }
  st.plan = plan_buckets(numels, options.bucket_cap_bytes);
  const std::vector<std::int64_t> signature = layout_signature(numels, options);
  require_identical(comm, std::as_bytes(std::span(signature)),
                    "the parameter sizes and reducer options");
  st.comm = comm.duplicate();
  st.is_final.assign(st.params.size(), false);
  st.stats.buckets = static_cast<std::int64_t>(st.plan.buckets.size());
  const int n = comm.size();
  if (n == 1) return;
  st.type = options.wire == WireFormat::float32 ? MPI_FLOAT : MPI_UINT16_T;
  st.bytes = wire_bytes(options.wire);
  void* tag_ub = nullptr;
  int has_tag_ub = 0;
  MPI_Comm_get_attr(st.comm.impl()->comm, MPI_TAG_UB, &tag_ub, &has_tag_ub);
  const std::int64_t max_tag = has_tag_ub ? *static_cast<int*>(tag_ub) : 32767;
  if (detail::kFirstBucketTag + 2 * static_cast<std::int64_t>(st.plan.buckets.size()) > max_tag) {
    throw Error(
        fmt::format("{}: {} buckets need more message tags than MPI offers ({}); raise "
                    "bucket_cap_bytes",
                    comm.where(), st.plan.buckets.size(), max_tag));
  }
  st.buckets.resize(st.plan.buckets.size());
  for (std::size_t b = 0; b < st.plan.buckets.size(); ++b) {
    State::BucketState& s = st.buckets[b];
    const std::int64_t numel = st.plan.buckets[b].numel;
    s.mine = part_of(numel, n, comm.rank());
    if (part_of(numel, n, 0).size() > INT_MAX) {
      throw Error(fmt::format("{}: bucket {} has {} elements: at most {} per rank", comm.where(), b,
                              numel, INT_MAX));
    }
    s.send.resize(static_cast<std::size_t>(numel * st.bytes));
    s.result.resize(static_cast<std::size_t>(numel * st.bytes));
    s.parts.resize(static_cast<std::size_t>(s.mine.size() * (n - 1) * st.bytes));
    st.stats.bytes_sent_per_step += (numel - s.mine.size() + s.mine.size() * (n - 1)) * st.bytes;
  }
}

GradientReducer::~GradientReducer() = default;

autograd::LeafReadyHook GradientReducer::hook() {
  return [this](const void* id, Tensor&) {
    State& st = *state_;
    const auto it = st.index.find(id);
    if (it == st.index.end() || st.comm.size() == 1) return;
    const std::size_t i = it->second;
    if (st.is_final[i]) {
      throw Error(fmt::format(
          "{}: the gradient of parameter {} became final twice before finish(): with gradient "
          "accumulation, pass the reducer's hook to the last backward only",
          st.comm.where(), i));
    }
    st.is_final[i] = true;
    const std::size_t b = st.plan.bucket_of[i];
    if (++st.buckets[b].ready == st.plan.buckets[b].params.size()) {
      st.start(b);
      ++st.started_by_hook;
    }
    st.progress();
  };
}

void GradientReducer::finish() {
  State& st = *state_;
  const auto t0 = std::chrono::steady_clock::now();
  if (st.comm.size() > 1) {
    for (std::size_t b = 0; b < st.buckets.size(); ++b) {
      if (!st.buckets[b].started) st.start(b);
    }
    detail::wait_bounded(
        st.comm, [&] { return st.progress(); },
        [&] { return st.complete_count == static_cast<std::int64_t>(st.buckets.size()); },
        [&] { return st.stalled(); });
    st.requests.clear();
    for (State::BucketState& s : st.buckets) {
      s.ready = 0;
      s.started = s.reduced = s.complete = false;
    }
    st.complete_count = 0;
    st.is_final.assign(st.params.size(), false);
  }
  st.stats.started_during_backward = st.started_by_hook;
  st.started_by_hook = 0;
  st.stats.finish_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++st.stats.steps;
}

const BucketPlan& GradientReducer::plan() const {
  return state_->plan;
}

const ReducerStats& GradientReducer::stats() const {
  return state_->stats;
}

}  // namespace mantissa::dist
