// A module that registers a null child (the library audit of 2026-11-28, docs/reliability.md):
// refused with mantissa::Error naming the child, where it once crashed when the tree was walked.
#include <gtest/gtest.h>

#include "mantissa/error.hpp"
#include "mantissa/nn/module.hpp"

namespace mantissa::nn {
namespace {

struct Holder : Module {
  void add_null() { register_module<Module>("head", nullptr); }
};

TEST(ModuleMisuse, ANullChildIsRefusedByName) {
  Holder h;
  std::string e;
  try {
    h.add_null();
  } catch (const Error& x) {
    e = x.what();
  }
  EXPECT_EQ(e, "register_module: module 'head' is null");
  EXPECT_TRUE(h.parameters().empty());  // nothing was added: the tree can be walked
}

}  // namespace
}  // namespace mantissa::nn
