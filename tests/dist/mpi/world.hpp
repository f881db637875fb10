#pragma once
// The job's communicator for the tests that run under mpirun (mpi/main.cpp sets it).
#include "mantissa/dist/communicator.hpp"

namespace mantissa::testing {

const dist::Communicator& world();
void set_world(const dist::Communicator* world);

}  // namespace mantissa::testing
