#include "mantissa/dist/step_agreement.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "mantissa/error.hpp"

namespace mantissa::dist {
namespace {

struct Facts {
  double sum_squares;
  std::uint64_t finite;
};

}  // namespace

double StepDecision::norm() const {
  return std::sqrt(sum_squares);
}

StepDecision agree_on_step(const Communicator& comm, bool finite, double sum_squares,
                           GradLayout layout) {
  const Facts mine{sum_squares, finite ? 1u : 0u};
  const std::vector<std::byte> all = comm.allgather(std::as_bytes(std::span(&mine, 1)));
  std::vector<Facts> facts(static_cast<std::size_t>(comm.size()));
  std::memcpy(facts.data(), all.data(), all.size());
  StepDecision d;
  for (int r = 0; r < comm.size(); ++r) {
    if (!facts[static_cast<std::size_t>(r)].finite) d.nonfinite_ranks.push_back(r);
  }
  d.finite = d.nonfinite_ranks.empty();
  if (layout == GradLayout::sharded) {
    d.sum_squares = facts[0].sum_squares;
    for (std::size_t r = 1; r < facts.size(); ++r) d.sum_squares += facts[r].sum_squares;
    d.finite = d.finite && std::isfinite(d.sum_squares);
    return d;
  }
  d.sum_squares = facts[0].sum_squares;
  if (!d.finite) return d;
  std::vector<int> differing;
  for (std::size_t r = 1; r < facts.size(); ++r) {
    if (std::memcmp(&facts[r].sum_squares, &facts[0].sum_squares, sizeof(double)) != 0) {
      differing.push_back(static_cast<int>(r));
    }
  }
  if (!differing.empty()) {
    const Facts& f = facts[static_cast<std::size_t>(differing[0])];
    throw Error(fmt::format(
        "{}: the replicated gradients differ between ranks: squared norm {:.17g} on rank {} vs "
        "{:.17g} on rank 0 ({} of {} ranks differ): the replicas have diverged",
        comm.where(), f.sum_squares, differing[0], facts[0].sum_squares, differing.size(),
        comm.size()));
  }
  return d;
}

void agree_on_success(const Communicator& comm, const std::string& failure) {
  const std::vector<std::vector<std::byte>> all =
      comm.allgather_blobs(std::as_bytes(std::span(failure.data(), failure.size())));
  std::vector<int> failed;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (!all[r].empty()) failed.push_back(static_cast<int>(r));
  }
  if (failed.empty()) return;
  const auto text = [&](int r) {
    const std::vector<std::byte>& b = all[static_cast<std::size_t>(r)];
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  };
  const std::string first = text(failed[0]);
  bool alike = failed.size() == all.size();
  for (int r : failed) alike = alike && text(r) == first;
  if (alike) throw JobError(first);
  std::string others;
  if (failed.size() > 1) {
    others = fmt::format(" (and {} other rank{})", failed.size() - 1, failed.size() > 2 ? "s" : "");
  }
  const std::string where = fmt::format("dist: rank {} of {}", failed[0], comm.size());
  if (first.starts_with(where + ": ")) {  // the message names its rank already
    throw JobError(where + others + first.substr(where.size()));
  }
  throw JobError(where + others + ": " + first);
}

void require_identical(const Communicator& comm, std::span<const std::byte> blob,
                       std::string_view what) {
  const std::vector<std::vector<std::byte>> blobs = comm.allgather_blobs(blob);
  const std::vector<std::byte>& root = blobs[0];
  for (std::size_t r = 1; r < blobs.size(); ++r) {
    const std::vector<std::byte>& b = blobs[r];
    if (b == root) continue;
    std::size_t at = 0;
    while (at < b.size() && at < root.size() && b[at] == root[at]) ++at;
    throw Error(
        fmt::format("{}: a mismatch across ranks in {}: rank {} differs from rank 0 at byte "
                    "{} (rank {}: {} bytes, rank 0: {} bytes)",
                    comm.where(), what, r, at, r, b.size(), root.size()));
  }
}

}  // namespace mantissa::dist
