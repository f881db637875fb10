#pragma once
// The MPI side of the dist layer, private to src/dist: the communicator handle, error
// translation, point-to-point request sets that know which peer each request waits for, and
// the bounded wait every blocking step of the layer goes through.
#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

#include "mantissa/dist/communicator.hpp"

namespace mantissa::dist {

struct Communicator::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  explicit Impl(MPI_Comm c) : comm(c) {}
  ~Impl();  // frees the handle unless MPI is already finalized
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
};

namespace detail {

// Tags on a communicator: the dist layer's collectives use kCollectiveTag; a GradientReducer
// works on a duplicate of its own, with tags from kFirstBucketTag up.
inline constexpr int kCollectiveTag = 1;
inline constexpr int kFirstBucketTag = 16;

std::string mpi_error_text(int rc);
// Throws mantissa::Error "<where>: <what>: <MPI's message>" unless rc is MPI_SUCCESS.
void check_mpi(int rc, const Communicator& comm, const std::string& what);

// Non-blocking sends and receives, each labelled with the peer it talks to and a number its
// owner gives meaning to.
class RequestSet {
 public:
  void recv(void* buffer, int count, MPI_Datatype type, int peer, int tag, MPI_Comm comm, int label,
            const Communicator& where);
  void send(const void* buffer, int count, MPI_Datatype type, int peer, int tag, MPI_Comm comm,
            int label, const Communicator& where);
  // Tests every pending request once; on_done(label) for each that completed. Returns whether
  // any did. A request that completed in error throws mantissa::Error naming its peer.
  bool test(const Communicator& where, const std::function<void(int label)>& on_done);
  bool all_done() const { return pending_ == 0; }
  // The peers with a receive still pending (or, when none, a send), ascending, each once.
  std::vector<int> waiting_for() const;
  void clear();  // after all_done(): ready for reuse, keeping capacity

 private:
  struct Entry {
    int peer;
    int label;
    bool receive;
    std::string what() const;
  };
  void add(const Entry& e, int rc, MPI_Request r, const Communicator& where);

  std::vector<MPI_Request> requests_;
  std::vector<Entry> entries_;
  std::vector<int> indices_;
  std::vector<MPI_Status> statuses_;
  int pending_ = 0;
};

// Calls poll() until done(), sleeping briefly between polls that found nothing (so a rank
// that waits does not steal the core a computing rank needs). When timeout_seconds pass
// without poll() reporting progress, throws mantissa::Error "<where>: <stalled()>".
void wait_bounded(const Communicator& comm, const std::function<bool()>& poll,
                  const std::function<bool()>& done, const std::function<std::string()>& stalled);

// Waits for every request of `set`; on timeout the message names the ranks still awaited and
// `what` the collective was.
void wait_all(const Communicator& comm, RequestSet& set, const std::string& what);

// "rank 1", "ranks 1, 3".
std::string ranks_text(const std::vector<int>& ranks);

}  // namespace detail
}  // namespace mantissa::dist
