#pragma once
// The MPI runtime of one process, owned by the program (one Runtime in main, before any other
// work). Started by an MPI launcher (mpirun, or a PMIx launcher such as srun --mpi=pmix), the
// process initializes MPI with MPI_THREAD_FUNNELED (only the thread that made the Runtime calls
// MPI; OpenMP workers never do) and world() spans every rank of the job. Started on its own,
// the process does not touch MPI at all: world() is one rank, every collective is local, and
// the program behaves exactly as it would without the dist layer (no singleton MPI start, no
// daemon, no need for mpirun).
#include <memory>

#include "mantissa/dist/communicator.hpp"

namespace mantissa::dist {

// True when an MPI launcher started this process (its environment names a rank of a job:
// OMPI_COMM_WORLD_SIZE from Open MPI's mpirun, or PMIX_RANK from a PMIx launcher).
bool launched_by_mpi();

class Runtime {
 public:
  // MPI_Init_thread(FUNNELED) when launched_by_mpi(), else nothing. Throws mantissa::Error
  // when a Runtime already exists in this process, or when MPI cannot give FUNNELED.
  Runtime(int& argc, char**& argv);
  // MPI_Finalize (a collective: every rank must get here), unless abort() ran.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  bool distributed() const { return distributed_; }
  // Every rank of the job, on a communicator of its own (a duplicate of MPI_COMM_WORLD, with
  // errors returned rather than fatal), or the one-rank communicator when not distributed.
  Communicator& world() { return world_; }
  const Communicator& world() const { return world_; }

  // Ends every rank of the job (MPI_Abort: the launcher kills the others and reports this
  // rank); without MPI, std::exit(code). For the program, after it has told the user why:
  // the library never calls it. The way out after a dist Error, whose rank cannot rejoin
  // the others' collectives.
  [[noreturn]] void abort(int code);

 private:
  bool distributed_ = false;
  Communicator world_;
};

}  // namespace mantissa::dist
