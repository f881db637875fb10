// The optimizers PyTorch has, against trajectories PyTorch 1.13 produced on the same problem
// (tools/fixtures/make_optimizer_fixture.py; the fixture is committed), AMSGrad and maximize
// included. Tolerance per
// element: 1e-6 + 2e-5 |torch| (float32 arithmetic in a different order, over <= 8 steps).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "mantissa/optim/optimizer.hpp"

namespace mantissa::optim {
namespace {

using json = nlohmann::json;

json load_fixture() {
  std::ifstream in(std::string(MANTISSA_TEST_FIXTURES) + "/optimizers.json");
  EXPECT_TRUE(in.good()) << "missing fixture";
  return json::parse(in);
}

// The fixture names an optimizer and every hyperparameter it has, as PyTorch used it (flags
// as 0 or 1, betas/etas/step_sizes as pairs): none is left to mantissa's defaults.
OptimizerSettings settings_of(const std::string& name, const json& hyperparameters) {
  std::optional<OptimizerSettings> s = default_settings(name);
  EXPECT_TRUE(s) << name;
  std::size_t used = 0;
  auto take = [&](std::string_view field) -> const json* {
    if (!hyperparameters.contains(std::string(field))) return nullptr;
    ++used;
    return &hyperparameters[std::string(field)];
  };
  std::visit(
      [&](auto& settings) {
        using S = std::decay_t<decltype(settings)>;
        for_each_field(settings, Overloaded{
                                     [&](const NumberField<S>& f, double& v) {
                                       if (const json* j = take(f.name)) v = j->get<double>();
                                     },
                                     [&](const FlagField<S>& f, bool& v) {
                                       if (const json* j = take(f.name)) v = j->get<double>() != 0;
                                     },
                                     [&](const CountField<S>&, int&) {},
                                     [&](const PairField<S>& f, double& a, double& b) {
                                       if (const json* j = take(f.name)) {
                                         a = (*j)[0].get<double>();
                                         b = (*j)[1].get<double>();
                                       }
                                     },
                                 });
      },
      *s);
  EXPECT_EQ(used, hyperparameters.size()) << name << " " << hyperparameters.dump();
  return *s;
}

tensor::Tensor tensor_of(const json& values, const json& shape) {
  std::vector<float> v;
  for (double x : values) v.push_back(static_cast<float>(x));
  tensor::Shape s;
  for (std::int64_t d : shape) s.push_back(d);
  return tensor::Tensor::from_vector(v, s);
}

TEST(OptimizersVsTorch, TrajectoriesMatch) {
  const json f = load_fixture();
  ASSERT_GE(f["runs"].size(), 21u);
  for (const json& run : f["runs"]) {
    const std::string name = run["optimizer"];
    std::vector<Variable> params = {Variable(tensor_of(f["init"]["w"], f["shapes"]["w"]), true),
                                    Variable(tensor_of(f["init"]["b"], f["shapes"]["b"]), true)};
    ParamGroup group;
    group.params = params;
    group.names = {"w", "b"};
    group.learning_rate = constant(run["lr"].get<double>());
    auto opt = make_optimizer(settings_of(name, run["hyperparameters"]), {group});
    const std::string label = name + " " + run["hyperparameters"].dump();
    for (int k = 0; k < run["steps"].get<int>(); ++k) {
      for (std::size_t i = 0; i < params.size(); ++i) {
        const char* key = i == 0 ? "w" : "b";
        const std::vector<float> noise =
            tensor_of(f["noise"][k][key], f["shapes"][key]).to_vector();
        std::vector<float> g = params[i].value().to_vector();
        for (std::size_t j = 0; j < g.size(); ++j) g[j] = 0.5f * g[j] + noise[j];
        params[i].mutable_grad() = tensor::Tensor::from_vector(g, params[i].shape());
      }
      opt->step();
      for (std::size_t i = 0; i < params.size(); ++i) {
        const char* key = i == 0 ? "w" : "b";
        const std::vector<float> got = params[i].value().to_vector();
        const json& want = run["trajectory"][k][key];
        for (std::size_t j = 0; j < got.size(); ++j) {
          const double w = want[j].get<double>();
          ASSERT_NEAR(got[j], w, 1e-6 + 2e-5 * std::fabs(w))
              << label << " step " << k + 1 << " " << key << "[" << j << "]";
        }
      }
    }
  }
}

}  // namespace
}  // namespace mantissa::optim
