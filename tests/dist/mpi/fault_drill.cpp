// A rank that fails mid-step, and what the others do: the program a test runs under mpirun.
//   fault_drill hang    rank 1 stops answering; rank 0 gives up after its 2 s timeout,
//                       naming rank 1, and ends the job
//   fault_drill kill    rank 1 dies (SIGKILL) while rank 0 waits in the all-reduce
//   fault_drill throw   rank 1 throws mantissa::Error in its step and ends the job
// Like the mantissa program, it reports an error as "<program>: error: <message>" and ends
// every rank with Runtime::abort.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

#include "mantissa/dist/gradient_reducer.hpp"
#include "mantissa/dist/runtime.hpp"
#include "mantissa/error.hpp"

using namespace mantissa;

namespace {

void one_step(dist::GradientReducer& reducer, autograd::Variable& w, const std::string& mode,
              int rank) {
  w.mutable_grad() = tensor::Tensor::full({1000}, 1.0f);
  if (rank == 1 && mode == "hang") std::this_thread::sleep_for(std::chrono::seconds(600));
  if (rank == 1 && mode == "kill") std::raise(SIGKILL);
  if (rank == 1 && mode == "throw") throw Error("dist: rank 1 of 2: an injected failure");
  reducer.finish();
}

}  // namespace

int main(int argc, char** argv) {
  dist::Runtime runtime(argc, argv);
  const std::string mode = argc > 1 ? argv[1] : "";
  dist::Communicator& world = runtime.world();
  try {
    if (mode != "hang" && mode != "kill" && mode != "throw") {
      throw Error("usage: fault_drill hang|kill|throw (under mpirun -np 2)");
    }
    world.set_timeout_seconds(2);
    autograd::Variable w(tensor::Tensor::zeros({1000}), true);
    dist::GradientReducer reducer(world, {w});
    one_step(reducer, w, "", world.rank());  // a healthy step first
    one_step(reducer, w, mode, world.rank());
    std::printf("fault_drill: rank %d finished without noticing the fault\n", world.rank());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fault_drill: error: %s\n", e.what());
    std::fflush(stderr);
    runtime.abort(1);
  }
  return 0;
}
