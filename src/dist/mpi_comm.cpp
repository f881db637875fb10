#include "dist/mpi_comm.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "mantissa/error.hpp"

namespace mantissa::dist {

Communicator::Impl::~Impl() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
}

namespace detail {

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(text, static_cast<std::size_t>(length));
}

void check_mpi(int rc, const Communicator& comm, const std::string& what) {
  if (rc != MPI_SUCCESS) throw Error(comm.where() + ": " + what + ": " + mpi_error_text(rc));
}

std::string RequestSet::Entry::what() const {
  return std::string(receive ? "receive from" : "send to") + " rank " + std::to_string(peer);
}

void RequestSet::recv(void* buffer, int count, MPI_Datatype type, int peer, int tag, MPI_Comm comm,
                      int label, const Communicator& where) {
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = MPI_Irecv(buffer, count, type, peer, tag, comm, &r);
  add({peer, label, true}, rc, r, where);
}

void RequestSet::send(const void* buffer, int count, MPI_Datatype type, int peer, int tag,
                      MPI_Comm comm, int label, const Communicator& where) {
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = MPI_Isend(buffer, count, type, peer, tag, comm, &r);
  add({peer, label, false}, rc, r, where);
}

void RequestSet::add(const Entry& e, int rc, MPI_Request r, const Communicator& where) {
  check_mpi(rc, where, e.what());
  requests_.push_back(r);
  entries_.push_back(e);
  ++pending_;
}

bool RequestSet::test(const Communicator& where, const std::function<void(int)>& on_done) {
  if (pending_ == 0) return false;
  indices_.resize(requests_.size());
  statuses_.resize(requests_.size());
  int count = 0;
  const int rc = MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &count,
                              indices_.data(), statuses_.data());
  if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) check_mpi(rc, where, "MPI_Testsome");
  if (count == MPI_UNDEFINED || count == 0) return false;
  for (int i = 0; i < count; ++i) {
    const Entry& e = entries_[static_cast<std::size_t>(indices_[i])];
    if (rc == MPI_ERR_IN_STATUS && statuses_[i].MPI_ERROR != MPI_SUCCESS) {
      check_mpi(statuses_[i].MPI_ERROR, where, e.what());
    }
  }
  pending_ -= count;
  for (int i = 0; i < count; ++i) on_done(entries_[static_cast<std::size_t>(indices_[i])].label);
  return true;
}

std::vector<int> RequestSet::waiting_for() const {
  std::vector<int> peers;
  for (const bool receives : {true, false}) {
    for (std::size_t i = 0; i < requests_.size(); ++i) {
      if (requests_[i] != MPI_REQUEST_NULL && entries_[i].receive == receives) {
        peers.push_back(entries_[i].peer);
      }
    }
    if (!peers.empty()) break;
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

void RequestSet::clear() {
  requests_.clear();
  entries_.clear();
  pending_ = 0;
}

void wait_bounded(const Communicator& comm, const std::function<bool()>& poll,
                  const std::function<bool()>& done, const std::function<std::string()>& stalled) {
  using Clock = std::chrono::steady_clock;
  const auto timeout = std::chrono::duration<double>(comm.timeout_seconds());
  auto last_progress = Clock::now();
  int idle_polls = 0;
  while (!done()) {
    if (poll()) {
      last_progress = Clock::now();
      idle_polls = 0;
      continue;
    }
    if (Clock::now() - last_progress > timeout) {
      throw Error(comm.where() + ": " + stalled());
    }
    // Spin briefly (shared-memory messages arrive within microseconds), then yield the core.
    if (++idle_polls > 200) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(ranks[i]);
  }
  return out;
}

void wait_all(const Communicator& comm, RequestSet& set, const std::string& what) {
  wait_bounded(
      comm, [&] { return set.test(comm, [](int) {}); }, [&] { return set.all_done(); },
      [&] {
        return fmt::format(
            "no message for {:g} s in {}: still waiting for {} (dead, hung or failed)",
            comm.timeout_seconds(), what, ranks_text(set.waiting_for()));
      });
  set.clear();
}

}  // namespace detail
}  // namespace mantissa::dist
