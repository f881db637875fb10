// Issue 27: the vendor's own words, in C++. Their defaults as printed (2e15, 2e-14) are taken
// as written and the likely intent (2^15, 2^-14) is said; GradScalerOptions{} follows
// set_half_dtype; the vendor's calls compile as they read (string overloads, a temporary
// parameter list for clip_grad_norm_, the scaler by reference, a plain parameter list).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "error_of.hpp"
#include "mantissa/amp/autocast.hpp"
#include "mantissa/amp/grad_scaler.hpp"
#include "mantissa/amp/optimizer_step.hpp"
#include "mantissa/autograd/ops.hpp"
#include "mantissa/nn/models.hpp"
#include "mantissa/optim/clip.hpp"
#include "mantissa/optim/optimizer.hpp"

namespace mantissa::amp {
namespace {

TEST(VendorApi, TwoE15IsTakenAsWrittenAndTheIntentIsSaid) {
  EXPECT_EQ(power_of_two_intent(2e15),
            "2e+15 is 2 x 10^15 as written; the vendor's documentation writes 2e15 for 2^15 "
            "(32768): write 32768 if that is meant");
  EXPECT_EQ(power_of_two_intent(2e-14).substr(0, 59),
            "2e-14 is 2 x 10^-14 as written; the vendor's documentation ");
  EXPECT_EQ(power_of_two_intent(32768), "");
  EXPECT_EQ(power_of_two_intent(2.0), "");
  std::vector<std::string> lines;
  GradScalerOptions o = GradScalerOptions::defaults_for(numerics::Format::float16);
  o.init_scale = 2e15;
  o.max_loss_scale = 2e15;
  o.log = [&](const std::string& l) { lines.push_back(l); };
  const GradScaler s(o);
  EXPECT_EQ(s.get_scale(), 2e15);  // accepted as the library documents it
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("initial_loss_scale: 2e+15 is 2 x 10^15 as written", 0), 0u);
  EXPECT_EQ(lines[1].rfind("max_loss_scale: 2e+15 is 2 x 10^15 as written", 0), 0u);
  o.min_loss_scale = 2e-14;
  EXPECT_EQ(
      testing::error_of([&] { GradScaler bad(o); }),
      "min_loss_scale: 2e-14 is below the smallest allowed, 2^-14 (6.103515625e-05); 2e-14 is "
      "2 x 10^-14 as written; the vendor's documentation writes 2e-14 for 2^-14 "
      "(6.103515625e-05): write 6.103515625e-05 if that is meant");
}

TEST(VendorApi, DefaultOptionsFollowTheHalfDtype) {
  set_half_dtype("cbfloat16");
  const GradScalerOptions cb{};
  set_half_dtype("float16");
  const GradScalerOptions fp16{};
  EXPECT_EQ(cb.init_scale, 2147483648.0);
  EXPECT_EQ(cb.max_loss_scale, 2147483648.0);
  EXPECT_EQ(fp16.init_scale, 32768.0);
  EXPECT_EQ(testing::error_of([] { set_half_dtype("float64"); }).substr(0, 20),
            "fp16_type: 'float64'");
  EXPECT_EQ(half_dtype(), numerics::Format::float16);
}

TEST(VendorApi, TheSeedsCallsCompileAsTheyRead) {
  nn::MlpConfig c;
  c.input_size = 4;
  c.hidden_sizes = {8};
  c.num_classes = 2;
  nn::Mlp model(c, 0);
  auto optimizer = optim::make_optimizer(optim::AdamW{}, model.parameters(), 1e-3);
  GradScaler grad_scaler("dynamic");
  EXPECT_EQ(grad_scaler.get_scale(), 32768.0);
  EXPECT_EQ(GradScaler("128").get_scale(), 128.0);
  EXPECT_EQ(testing::error_of([] { GradScaler bad("dynamc"); }),
            "loss_scaling_factor: 'dynamc' is neither \"dynamic\" nor a finite number > 0");
  const autograd::Variable x(tensor::Tensor::from_vector({1, 2, 3, 4, 4, 3, 2, 1}, {2, 4}));
  autograd::Variable loss = autograd::cross_entropy(model.logits(x), {0, 1});
  grad_scaler.scale(loss).backward();
  grad_scaler.unscale_(*optimizer);
  const double norm = optim::clip_grad_norm_(model.parameters(), 1e-3);
  EXPECT_GT(norm, 1e-3);
  EXPECT_NEAR(optim::grad_norm(model.parameters()), 1e-3, 1e-6);  // the model's own gradients
  EXPECT_TRUE(grad_scaler.step(*optimizer));
  grad_scaler.update();
  optimizer->zero_grad();
  loss = autograd::cross_entropy(model.logits(x), {0, 1});
  EXPECT_TRUE(optimizer_step(loss, *optimizer, grad_scaler, 1.0).stepped);
  EXPECT_EQ(optimizer->step_index(), 2);
}

}  // namespace
}  // namespace mantissa::amp
