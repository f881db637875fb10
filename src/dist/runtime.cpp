#include "mantissa/dist/runtime.hpp"

#include <atomic>
#include <cstdlib>

#include "dist/mpi_comm.hpp"
#include "mantissa/error.hpp"

namespace mantissa::dist {
namespace {

std::atomic<bool> g_runtime_exists{false};

}  // namespace

bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

Runtime::Runtime(int& argc, char**& argv) {
  if (g_runtime_exists.exchange(true)) {
    throw Error("dist: a second Runtime: MPI is initialized once per process");
  }
  if (!launched_by_mpi()) return;
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    g_runtime_exists = false;
    throw Error("dist: MPI_Init_thread failed");
  }
  distributed_ = true;
  MPI_Comm world = MPI_COMM_NULL;
  if (provided < MPI_THREAD_FUNNELED || MPI_Comm_dup(MPI_COMM_WORLD, &world) != MPI_SUCCESS ||
      MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN) != MPI_SUCCESS) {
    MPI_Finalize();
    g_runtime_exists = false;
    throw Error(provided < MPI_THREAD_FUNNELED
                    ? "dist: this MPI library does not offer MPI_THREAD_FUNNELED"
                    : "dist: could not set up the world communicator");
  }
  world_ = Communicator(std::make_shared<Communicator::Impl>(world));
}

Runtime::~Runtime() {
  if (distributed_) {
    world_ = Communicator();
    MPI_Finalize();
  }
  g_runtime_exists = false;
}

void Runtime::abort(int code) {
  if (distributed_) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace mantissa::dist
