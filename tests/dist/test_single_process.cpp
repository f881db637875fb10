// Without mpirun: one rank, no MPI, every collective local, gradients untouched.
#include <gtest/gtest.h>

#include <cstdlib>

#include "mantissa/autograd/ops.hpp"
#include "mantissa/dist/gradient_reducer.hpp"
#include "mantissa/dist/runtime.hpp"
#include "mantissa/dist/step_agreement.hpp"
#include "mantissa/error.hpp"

namespace mantissa::dist {
namespace {

using autograd::Variable;
using tensor::Tensor;

TEST(SingleProcess, WithoutALauncherTheRuntimeLeavesMpiAlone) {
  ASSERT_FALSE(launched_by_mpi()) << "run this test without mpirun";
  int argc = 1;
  char name[] = "dist_tests";
  char* args[] = {name, nullptr};
  char** argv = args;
  Runtime runtime(argc, argv);
  EXPECT_FALSE(runtime.distributed());
  EXPECT_EQ(runtime.world().rank(), 0);
  EXPECT_EQ(runtime.world().size(), 1);
  EXPECT_EQ(runtime.world().where(), "dist: rank 0 of 1");
  EXPECT_THROW({ Runtime second(argc, argv); }, Error);  // MPI starts once per process
}

TEST(SingleProcess, CollectivesAreLocal) {
  const Communicator one;
  const std::byte b[3] = {std::byte{1}, std::byte{2}, std::byte{3}};
  EXPECT_EQ(one.allgather(b), std::vector<std::byte>(b, b + 3));
  EXPECT_EQ(one.allgather_blobs(b).size(), 1u);
  one.barrier();
  require_identical(one, b, "three bytes");
  const StepDecision d = agree_on_step(one, false, 2.0, GradLayout::sharded);
  EXPECT_FALSE(d.finite);
  EXPECT_EQ(d.nonfinite_ranks, std::vector<int>{0});
  EXPECT_EQ(agree_on_step(one, true, 9.0, GradLayout::replicated).norm(), 3.0);
  EXPECT_THROW(Communicator().set_timeout_seconds(0), Error);
}

TEST(SingleProcess, TheReducerLeavesGradientsAsTheyAre) {
  const Variable w(Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}), true);
  const Variable unused(Tensor::from_vector({1}, {1}), true);
  GradientReducer reducer(Communicator(), {w, unused, w}, {.bucket_cap_bytes = 8});
  EXPECT_EQ(reducer.plan().buckets.size(), 2u);  // w counted once; 24 bytes > 8: own bucket
  const Variable x(Tensor::from_vector({1, -1, 2}, {1, 3}));
  autograd::backward(autograd::sum(autograd::linear(x, w, Variable())), 1.0f, reducer.hook());
  const std::vector<float> before = w.grad().to_vector();
  reducer.finish();
  EXPECT_EQ(w.grad().to_vector(), before);
  EXPECT_EQ(w.grad().to_vector(), (std::vector<float>{1, -1, 2, 1, -1, 2}));
  EXPECT_FALSE(unused.grad().defined());
  EXPECT_EQ(reducer.stats().steps, 1);
}

}  // namespace
}  // namespace mantissa::dist
