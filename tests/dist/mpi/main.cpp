// GoogleTest under mpirun: every rank runs every test; a rank whose tests failed ends the job
// (so no rank waits for it). Started without mpirun it says how to run it and skips (77).
#include <gtest/gtest.h>

#include <cstdio>

#include "mantissa/dist/runtime.hpp"
#include "world.hpp"

namespace mantissa::testing {
namespace {
const dist::Communicator* g_world = nullptr;
}  // namespace

const dist::Communicator& world() {
  return *g_world;
}
void set_world(const dist::Communicator* w) {
  g_world = w;
}

}  // namespace mantissa::testing

int main(int argc, char** argv) {
  mantissa::dist::Runtime runtime(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (runtime.world().size() < 2) {
    std::fprintf(stderr, "%s: run under mpirun with 2 or more ranks (tests/dist/mpi_run.sh)\n",
                 argv[0]);
    return 77;
  }
  runtime.world().set_timeout_seconds(20);
  mantissa::testing::set_world(&runtime.world());
  const int rc = RUN_ALL_TESTS();
  if (rc != 0) runtime.abort(rc);
  return 0;
}
