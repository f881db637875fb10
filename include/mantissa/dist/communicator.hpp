#pragma once
// Communicator: the ranks of a data-parallel job, and the few collectives the dist layer is
// made of. Every wait is bounded: when no message from a peer arrives for timeout_seconds(),
// the wait throws mantissa::Error naming this rank and the ranks it was waiting for (a rank
// that died, hung or failed). MPI errors come back as mantissa::Error naming both ranks,
// never as a fatal MPI handler. After such an Error this rank cannot rejoin the others'
// collectives: the program reports it and ends the job (Runtime::abort).
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace mantissa::dist {

class Communicator {
 public:
  // One rank, no MPI: every collective is local (what a run without mpirun uses).
  Communicator() = default;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  // "dist: rank 1 of 4": the start of every message the dist layer raises.
  std::string where() const;

  // How long a wait may go without a message from a peer before it gives up (default 30 s).
  double timeout_seconds() const { return timeout_seconds_; }
  void set_timeout_seconds(double seconds);  // > 0, finite; throws mantissa::Error

  // Collective: every rank's `mine` (the same byte count on every rank: more is an Error),
  // concatenated in rank order; identical on every rank.
  std::vector<std::byte> allgather(std::span<const std::byte> mine) const;
  // Collective: every rank's blob, any size, in rank order.
  std::vector<std::vector<std::byte>> allgather_blobs(std::span<const std::byte> mine) const;
  // Collective: returns once every rank has called it.
  void barrier() const;
  // Collective: the same ranks and timeout on a context of their own, whose messages never
  // meet this one's (each GradientReducer works on one).
  Communicator duplicate() const;

  // The MPI side (src/dist/mpi_comm.hpp); null for the one-rank communicator.
  struct Impl;
  const std::shared_ptr<Impl>& impl() const { return impl_; }
  // The communicator over `impl` (the Runtime makes the world one).
  explicit Communicator(std::shared_ptr<Impl> impl);

 private:
  std::shared_ptr<Impl> impl_;
  int rank_ = 0;
  int size_ = 1;
  double timeout_seconds_ = 30.0;
};

}  // namespace mantissa::dist
