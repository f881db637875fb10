// Each kind of bad configuration gets its message: unknown key, wrong type, out of range,
// mutually exclusive clipping, cbfloat16 without dynamic scaling, missing file; and --set.
#include <gtest/gtest.h>

#include <set>

#include "config_base.hpp"
#include "mantissa/config/config.hpp"
#include "mantissa/error.hpp"
#include "mantissa/train/trainer.hpp"

namespace mantissa::config {
namespace {

TEST(Config, ParsesTheSeedsLayout) {
  const TrainerConfig c = parse_config(kBase, {}, "test.yaml");
  EXPECT_EQ(c.seed, 3u);
  EXPECT_EQ(c.model.kind, ModelKind::mlp);
  EXPECT_EQ(c.model.mlp.hidden_sizes, std::vector<std::int64_t>{32});
  EXPECT_EQ(c.model.mlp.activation, nn::Activation::relu);
  ASSERT_TRUE(std::holds_alternative<optim::AdamW>(c.optimizer.settings));
  EXPECT_EQ(std::get<optim::AdamW>(c.optimizer.settings).weight_decay, 0.01);
  EXPECT_EQ(std::get<optim::AdamW>(c.optimizer.settings).beta2, 0.999);  // the default
  ASSERT_EQ(c.schedulers.size(), 1u);
  EXPECT_EQ(c.schedulers[0].key, ScheduledKey::learning_rate);
  EXPECT_DOUBLE_EQ(c.schedulers[0].schedule->value(5), 0.5e-3);
  EXPECT_DOUBLE_EQ(c.schedulers[0].schedule->value(10), 1.0e-3);
  EXPECT_EQ(c.precision.fp16_type, numerics::Format::float16);
  EXPECT_TRUE(std::holds_alternative<amp::DynamicLossScaling>(c.precision.loss_scaling));
  EXPECT_EQ(c.precision.on_stuck, amp::StuckPolicy::raise);
  EXPECT_EQ(c.train_data.dataset, DatasetKind::fashion_mnist);
  EXPECT_EQ(c.train_data.split, Split::train);
  EXPECT_EQ(c.loop.max_steps, 100);
  EXPECT_EQ(c.train_data.batch_size, 64);
}

TEST(Config, OverridesApplyBeforeValidation) {
  const TrainerConfig c = parse_config(
      kBase, {"trainer.init.loop.max_steps=7", "trainer.init.logging.log_steps=2"}, "t");
  EXPECT_EQ(c.loop.max_steps, 7);
  EXPECT_EQ(c.logging.log_steps, 2);
  expect_error({"nonsense"}, "--set 'nonsense': expected key.path=value");
}

TEST(Config, PrecisionStatsAndOverflowAttributionSettings) {
  const TrainerConfig defaults = parse_config(kBase, {}, "t");
  EXPECT_EQ(defaults.logging.precision_stats_steps, 0);  // off
  EXPECT_FALSE(defaults.logging.samples_precision(1));
  EXPECT_TRUE(defaults.logging.attribute_overflows);
  const TrainerConfig c = parse_config(kBase,
                                       {"trainer.init.logging.precision_stats_steps=10",
                                        "trainer.init.logging.attribute_overflows=false"},
                                       "t");
  EXPECT_FALSE(c.logging.attribute_overflows);
  // Step 1, then every 10th.
  std::vector<std::int64_t> sampled;
  for (std::int64_t step = 1; step <= 30; ++step) {
    if (c.logging.samples_precision(step)) sampled.push_back(step);
  }
  EXPECT_EQ(sampled, (std::vector<std::int64_t>{1, 10, 20, 30}));
  expect_error({"trainer.init.logging.precision_stats_steps=-1"},
               "trainer.init.logging.precision_stats_steps: -1 must be >= 0");
  expect_error({"trainer.init.logging.attribute_overflows=3"},
               "trainer.init.logging.attribute_overflows: '3' is not true or false");
}

TEST(Config, WordsBecomeTypedValues) {
  const TrainerConfig c = parse_config(
      kBase,
      {"trainer.init.precision.loss_scaling_factor=128",
       "trainer.init.precision.on_stuck=fall_back", "trainer.init.precision.fp16_type=bfloat16",
       "trainer.init.model.activation=gelu",
       "trainer.init.optimizer={SGD: {learning_rate: 0.1, momentum: 0.9, nesterov: true}}",
       "trainer.fit.train_dataloader.split=test"},
      "t");
  ASSERT_TRUE(std::holds_alternative<amp::StaticLossScaling>(c.precision.loss_scaling));
  EXPECT_EQ(std::get<amp::StaticLossScaling>(c.precision.loss_scaling).scale, 128.0);
  EXPECT_EQ(c.precision.on_stuck, amp::StuckPolicy::fall_back);
  EXPECT_EQ(c.precision.fp16_type, numerics::Format::bfloat16);
  EXPECT_EQ(c.model.mlp.activation, nn::Activation::gelu);
  ASSERT_TRUE(std::holds_alternative<optim::Sgd>(c.optimizer.settings));
  EXPECT_EQ(std::get<optim::Sgd>(c.optimizer.settings).momentum, 0.9);
  EXPECT_TRUE(std::get<optim::Sgd>(c.optimizer.settings).nesterov);
  EXPECT_EQ(c.optimizer.learning_rate, 0.1);
  EXPECT_EQ(c.train_data.split, Split::test);
}

TEST(Config, EachWordHasOneMessage) {
  expect_error({"trainer.init.precision.fp16_type=fp16"},
               "trainer.init.precision.fp16_type: 'fp16' (expected one of: float16, bfloat16, "
               "cbfloat16)");
  expect_error({"trainer.init.precision.fp16_type=float8_e4m3"},
               "trainer.init.precision.fp16_type: 'float8_e4m3' (expected one of: float16, "
               "bfloat16, cbfloat16)");
  expect_error({"trainer.init.precision.loss_scaling_factor=lots"},
               "trainer.init.precision.loss_scaling_factor: 'lots' is neither \"dynamic\" nor a "
               "finite number > 0");
  expect_error({"trainer.init.precision.loss_scaling_factor=-4"},
               "trainer.init.precision.loss_scaling_factor: '-4' is neither \"dynamic\" nor a "
               "finite number > 0");
  expect_error({"trainer.init.precision.on_stuck=panic"},
               "trainer.init.precision.on_stuck: 'panic' (expected one of: raise, keep_going, "
               "fall_back)");
  expect_error({"trainer.init.model.activation=tanh"},
               "trainer.init.model.activation: 'tanh' (expected one of: relu, gelu)");
  expect_error({"trainer.fit.train_dataloader.split=valid"},
               "trainer.fit.train_dataloader.split: 'valid' (expected one of: train, val, test)");
  expect_error({"trainer.fit.train_dataloader.split=val"},
               "trainer.fit.train_dataloader.split: 'val' (expected train or test)");
  expect_error({"trainer.init.optimizer={AdamW: {beta1: 1.5}}"},
               "trainer.init.optimizer.AdamW.beta1: 1.5 must be in [0, 1)");
  expect_error({"trainer.init.optimizer={SGD: {nesterov: 1.0e-3}}"},
               "trainer.init.optimizer.SGD.nesterov: '1.0e-3' is not true or false");
  expect_error({"trainer.init.schedulers=[{CyclicLR: {base_lr: 0.1, max_lr: 1, step_size_up: 2, "
                "mode: sawtooth}}]"},
               "trainer.init.schedulers[0].CyclicLR.mode: 'sawtooth' (expected one of: triangular, "
               "triangular2, exp_range)");
  expect_error({"trainer.init.schedulers=[{OneCycleLR: {max_lr: 1, total_steps: 10, "
                "anneal_strategy: cosine}}]"},
               "trainer.init.schedulers[0].OneCycleLR.anneal_strategy: 'cosine' (expected one of: "
               "cos, linear)");
  // OneCycle's rates are factors of its peak: a zero factor or peak would make them NaN.
  expect_error({"trainer.init.schedulers=[{OneCycleLR: {max_lr: 1, final_div_factor: 0}}]"},
               "trainer.init.schedulers[0].OneCycleLR.final_div_factor: 0 must be > 0");
  expect_error({"trainer.init.schedulers=[{OneCycleLR: {max_lr: 0}}]"},
               "trainer.init.schedulers[0].OneCycleLR.max_lr: 0 must be > 0");
  expect_error({"trainer.init.schedulers=[{OneCycleLR: {max_lr: 1, initial_learning_rate: 0, "
                "final_learning_rate: 0.5}}]"},
               "trainer.init.schedulers[0].OneCycleLR.final_learning_rate: 0.5 after "
               "trainer.init.schedulers[0].OneCycleLR.initial_learning_rate 0 (the final rate is "
               "the initial one divided by a factor: it must be 0 too)");
  expect_error({"trainer.init.schedulers=[{CosineLR: {}}]"},
               "trainer.init.schedulers[0]: unknown scheduler 'CosineLR' (expected one of: "
               "ConstantLR, ConstantWD, LinearLR, LinearWD");
}

TEST(Config, EachKindOfBadInputIsNamed) {
  expect_error({"trainer.init.loop.max_stepz=5"},
               "trainer.init.loop.max_stepz: unknown key (expected one of:");
  expect_error({"trainer.init.loop.max_steps=many"},
               "trainer.init.loop.max_steps: 'many' is not an integer");
  expect_error({"trainer.init.loop.max_steps=0"}, "trainer.init.loop.max_steps: 0 must be >= 1");
  expect_error(
      {"trainer.init.precision.max_gradient_value=2.0"},
      "trainer.init.precision.max_gradient_norm and max_gradient_value are mutually exclusive");
  expect_error({"trainer.init.precision.fp16_type=cbfloat16",
                "trainer.init.precision.loss_scaling_factor=64"},
               "cbfloat16 requires dynamic loss scaling");
  expect_error({"trainer.init.precision.precision_opt_level=4"},
               "precision_opt_level: 4 (expected one of: 0, 1, 2)");
  expect_error({"trainer.init.model.name=transformer"},
               "trainer.init.model.name: 'transformer' (expected one of: gpt, mlp, cnn)");
  expect_error({"trainer.init.optimizer={Adamm: {}}"}, "unknown name 'adamm'");
  expect_error({"trainer.init.optimizer={AdamW: {beta3: 0.1}}"},
               "trainer.init.optimizer.AdamW.beta3: unknown key");
  expect_error({"trainer.init.schedulers=[{CosineDecayLR: {initial_learning_rate: 1, "
                "end_learning_rate: 0, total_iters: 0}}]"},
               "trainer.init.schedulers[0]: schedule CosineDecay: total_iters must be > 0");
  expect_error({"trainer.fit.train_dataloader.dataset=imagenet"},
               "(expected one of: kjv, text, fashion_mnist)");
  expect_error({"trainer.fit.train_dataloader.dataset=kjv"}, "does not suit model 'mlp'");
  expect_error(
      {"trainer.init.model={name: gpt, num_heads: 5}", "trainer.fit.train_dataloader.dataset=kjv"},
      "trainer.init.model.num_heads: 5 must divide hidden_size 384");
  expect_error({"trainer.init.model.hidden_sizes=[512, -3]"},
               "trainer.init.model.hidden_sizes[1]: -3 must be >= 1");
  expect_error({"trainer.init.model={name: gpt, dropout_rate: 1.5}",
                "trainer.fit.train_dataloader.dataset=kjv"},
               "trainer.init.model.dropout_rate: 1.5 must be in [0, 1)");
  expect_error({"trainer.init.model={name: gpt}", "trainer.fit.train_dataloader={dataset: kjv}",
                "trainer.fit.val_dataloader={dataset: kjv, split: val, val_fraction: 0.2}"},
               "trainer.fit.val_dataloader.val_fraction: must match the train_dataloader's");
  try {
    load_config("/no/such/config.yaml", {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/config.yaml: cannot open"), std::string::npos);
  }
  try {
    parse_config("trainer: [1, 2", {}, "broken.yaml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("broken.yaml: not valid YAML"), std::string::npos);
  }
}

// Every value of each enum the config names has one word, and the word finds the value.
template <class E, std::size_t N>
void expect_one_word_each(const NameTable<E, N>& table, std::size_t values) {
  std::set<std::string_view> words;
  std::set<E> seen;
  for (const Named<E>& n : table) {
    words.insert(n.name);
    seen.insert(n.value);
    EXPECT_EQ(find_named(table, n.name), n.value) << n.name;
    EXPECT_EQ(name_of(table, n.value), n.name);
  }
  EXPECT_EQ(words.size(), values);
  EXPECT_EQ(seen.size(), values);
}

TEST(Config, NameTablesCoverTheirEnums) {
  expect_one_word_each(kModelNames, 3);
  expect_one_word_each(kDatasetNames, 3);
  expect_one_word_each(kSplitNames, 3);
  expect_one_word_each(train::kRunModeNames, 4);
  expect_one_word_each(kScheduledKeyNames, 2);
  expect_one_word_each(nn::kActivationNames, 2);
  expect_one_word_each(amp::kStuckPolicyNames, 3);
  expect_one_word_each(optim::kCyclicModeNames, 3);
  expect_one_word_each(optim::kAnnealNames, 2);
  expect_one_word_each(precision::kMatmulRouteNames, precision::kMatmulRouteCount);
  EXPECT_EQ(find_named(kModelNames, "GPT"), std::nullopt);  // words are exact
}

// Issue 17's settings: fp8 linear layers, bfloat16 master weights, the optimizer's state format.
TEST(Config, Fp8AndTrainingStateSettings) {
  const TrainerConfig c = parse_config(
      kBase,
      {"trainer.init.precision.fp16_type=bfloat16",
       "trainer.init.precision.fp8={enabled: true, recipe: e4m3, history_length: 16, "
       "amax_compute: most_recent, margin: 1}",
       "trainer.init.precision.master_weights=bfloat16_kahan",
       "trainer.init.optimizer={AdamW: {learning_rate: 1.0e-3, state_dtype: bfloat16}}"},
      "test.yaml");
  EXPECT_TRUE(c.precision.fp8.enabled);
  EXPECT_EQ(c.precision.fp8.recipe, precision::Fp8Recipe::e4m3);
  EXPECT_EQ(c.precision.fp8.history_length, 16);
  EXPECT_EQ(c.precision.fp8.amax_compute, precision::AmaxCompute::most_recent);
  EXPECT_EQ(c.precision.fp8.margin, 1);
  EXPECT_TRUE(c.precision.policy().fp8.enabled);
  EXPECT_EQ(c.precision.master_weights, optim::MasterWeights::bfloat16_kahan);
  EXPECT_EQ(c.optimizer.state_format, numerics::Format::bfloat16);
  // Defaults: off, float32.
  const TrainerConfig d = parse_config(kBase, {}, "test.yaml");
  EXPECT_FALSE(d.precision.policy().fp8.enabled);
  EXPECT_EQ(d.precision.master_weights, optim::MasterWeights::float32);
  EXPECT_EQ(d.optimizer.state_format, numerics::Format::float32);
}

TEST(Config, Fp8AndTrainingStateErrorsNameTheKey) {
  expect_error({"trainer.init.precision.fp8={enabled: true, recipe: e5m2}"},
               "trainer.init.precision.fp8.recipe: 'e5m2' (expected one of: hybrid, e4m3)");
  expect_error({"trainer.init.precision.fp8={enabled: true, history_length: 0}"},
               "trainer.init.precision.fp8.history_length: 0 (expected 1 to 65536)");
  expect_error({"trainer.init.precision.fp8={enabled: true, margin: -1}"},
               "trainer.init.precision.fp8.margin: -1 (expected 0 to 64)");
  expect_error({"trainer.init.precision.fp8={enabled: true, window: 3}"},
               "trainer.init.precision.fp8.window");
  expect_error({"trainer.init.precision.enabled=false", "trainer.init.precision.fp8.enabled=true"},
               "trainer.init.precision.fp8.enabled: true needs enabled: true");
  expect_error({"trainer.init.precision.master_weights=bfloat16_kahan"},
               "trainer.init.precision.master_weights: bfloat16_kahan needs enabled: true and "
               "fp16_type: bfloat16");
  expect_error({"trainer.init.precision.master_weights=float64"},
               "trainer.init.precision.master_weights: 'float64' (expected one of: float32, "
               "bfloat16, bfloat16_stochastic, bfloat16_kahan)");
  expect_error({"trainer.init.optimizer={AdamW: {state_dtype: float16}}"},
               "trainer.init.optimizer.AdamW.state_dtype: 'float16' (expected one of: float32, "
               "bfloat16)");
}

}  // namespace
}  // namespace mantissa::config

namespace mantissa::config {
namespace {

std::string config_error(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  try {
    parse_config(yaml, sets, "c.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Issue 27: YAML's own rules hold: a key once per mapping, a quoted scalar is a string, and
// no setting takes an empty string; nesting is bounded before any key is read.
TEST(Config, DuplicateKeysQuotedScalarsAndEmptyStringsAreRefused) {
  EXPECT_EQ(config_error("trainer:\n  init:\n    seed: 2\n    seed: 3\n"),
            "c.yaml: trainer.init.seed: the key is given twice in one mapping (YAML allows it "
            "once; which value is meant?)");
  EXPECT_EQ(config_error(std::string(kBase) + "  fit:\n    train_dataloader: {dataset: kjv}\n"),
            "c.yaml: trainer.fit: the key is given twice in one mapping (YAML allows it once; "
            "which value is meant?)");
  EXPECT_EQ(config_error(kBase, {"trainer.init.seed=\"1\""}),
            "trainer.init.seed: '1' is quoted, so a string (expected a non-negative integer: "
            "write it without quotes)");
  EXPECT_EQ(config_error(kBase, {"trainer.fit.train_dataloader.shuffle='false'"}),
            "trainer.fit.train_dataloader.shuffle: 'false' is quoted, so a string (expected "
            "true or false: write it without quotes)");
  EXPECT_EQ(config_error(kBase, {"trainer.init.checkpoint.dir=''"}),
            "trainer.init.checkpoint.dir: an empty string (expected a string; leave the key out "
            "for the default)");
  EXPECT_EQ(config_error(kBase, {"trainer.init.loop.eval_frequency='5'"})
                .rfind("trainer.init.loop.eval_frequency: 5 (expected a positive integer", 0),
            0u);
  EXPECT_EQ(config_error(kBase, {"trainer.init.seed=7"}), "(no error)");
  const std::string deep = "a: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  EXPECT_EQ(config_error(deep).substr(0, 53),
            "c.yaml: nested too deeply for the YAML parser (line 1");
  std::string nested = "trainer: ";  // 70 flow levels: under yaml-cpp's bound, over ours
  for (int i = 0; i < 70; ++i) nested += "{a: ";
  nested += "1" + std::string(70, '}') + "\n";
  EXPECT_NE(config_error(nested).find("is nested more than 64 levels deep"), std::string::npos);
}

// Text that is not UTF-8 (a Latin-1 directory name): refused where the config is read, naming
// the key, instead of failing at the first checkpoint (whose JSON header stores the config)
// after training has begun.
TEST(Config, ValuesAndKeysThatAreNotUtf8AreRefusedBeforeTraining) {
  EXPECT_EQ(config_error("trainer:\n  init:\n    checkpoint: {dir: \"/tmp/ck\xe9\"}\n"),
            "c.yaml: trainer.init.checkpoint.dir: the value is not UTF-8 text (each checkpoint "
            "stores the run's config in its JSON header)");
  EXPECT_EQ(config_error("trainer:\n  init:\n    \"k\xe9\": 1\n"),
            "c.yaml: trainer.init.k\xe9: a key that is not UTF-8 text");
  EXPECT_NE(config_error(kBase, {"trainer.init.checkpoint.dir=/tmp/ck\xe9"})
                .find("the value is not UTF-8 text"),
            std::string::npos);
  EXPECT_EQ(config_error(kBase, {"trainer.init.checkpoint.dir=/tmp/caf\xc3\xa9"}), "(no error)");
}

// No explicit YAML tags (they would change how a value reads: !!str 3 is a string that reads
// as 3), no control characters in keys (a newline in one could forge a line of the error
// output, a NUL cut the message short), no empty keys or unbounded indices in --set paths.
TEST(Config, TagsControlCharactersInKeysAndOddOverridePathsAreRefused) {
  EXPECT_EQ(config_error(kBase, {"trainer.init.loop.max_steps=!!str 3"}),
            "--set 'trainer.init.loop.max_steps=!!str 3': the document: the YAML tag "
            "'tag:yaml.org,2002:str' (mantissa's settings take no tags: write the value "
            "plainly, a string in quotes)");
  EXPECT_EQ(config_error("trainer:\n  init:\n    seed: !foo 3\n"),
            "c.yaml: trainer.init.seed: the YAML tag '!foo' (mantissa's settings take no tags: "
            "write the value plainly, a string in quotes)");
  EXPECT_EQ(config_error("trainer:\n  init:\n    \"a\\nmantissa: error: fake\": 1\n"),
            "c.yaml: trainer.init.a\\x0amantissa: error: fake: a key with a control character "
            "(keys are words)");
  EXPECT_EQ(config_error(std::string("trainer:\n  init:\n    \"a\\0b\": 1\n")),
            "c.yaml: trainer.init.a\\x00b: a key with a control character (keys are words)");
  for (const char* path : {"trainer.init.loop.max_steps.", ".trainer.init.loop.max_steps",
                           "trainer..init.loop.max_steps"}) {
    EXPECT_EQ(config_error(kBase, {std::string(path) + "=3"}),
              std::string("--set ") + path +
                  ": an empty key in the path (keys are joined by single dots)");
  }
  EXPECT_EQ(config_error(std::string(kBase) + "---\ntrainer: {bogus: 1}\n"),
            "c.yaml: 2 YAML documents (a config is one; a second after '---' would be ignored)");
  EXPECT_EQ(config_error(kBase, {"trainer.fit.train_dataloader.shuffle=yes"}),
            "trainer.fit.train_dataloader.shuffle: 'yes' is not true or false");
  EXPECT_EQ(config_error(kBase, {"trainer.fit.train_dataloader.shuffle=False"}), "(no error)");
  EXPECT_EQ(config_error(kBase, {"trainer.init.optimizer={AdamW: {learning_rate: 1e-999}}"}),
            "trainer.init.optimizer.AdamW.learning_rate: '1e-999' is too small for a double (it "
            "would read as 0)");
  // Text YAML reads as nothing is not taken for null (only YAML's spellings of null are).
  EXPECT_EQ(config_error(kBase, {"trainer.init.loop.max_steps=#3"}),
            "--set 'trainer.init.loop.max_steps=#3': '#3' reads as no value in YAML (a comment or "
            "a document marker; write trainer.init.loop.max_steps=null to restore the default, or "
            "quote a string)");
  EXPECT_EQ(
      config_error(kBase, {"trainer.init.loop.max_steps=..."}).find("'...' reads as no value"),
      41u);
  EXPECT_EQ(config_error(kBase, {"trainer.init.loop.max_steps=~"}), "(no error)");
  // A merge key is named as one (yaml-cpp would read it as a key called "<<"); a quoted "<<"
  // is an ordinary key, which no section has.
  EXPECT_EQ(config_error("base: &b {seed: 3}\ntrainer:\n  init:\n    <<: *b\n"),
            "c.yaml: trainer.init.<<: a YAML merge key, which mantissa's YAML reader does not "
            "expand (write the keys out; an alias can stand for a whole value: `key: *name`)");
  EXPECT_EQ(config_error("trainer:\n  init:\n    \"<<\": 1\n").find("merge key"),
            std::string::npos);
  EXPECT_EQ(config_error(kBase, {"trainer.init.schedulers[99999999999999999999]=1"}),
            "--set trainer.init.schedulers[99999999999999999999]: the index in "
            "'schedulers[99999999999999999999]' is too large");
}

// A dataloader key its dataset does not read is refused, never ignored.
TEST(Config, KeysADatasetDoesNotReadAreRefused) {
  const auto error_of = [](const std::vector<std::string>& overrides) {
    try {
      parse_config(kBase, overrides, "test.yaml");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of({"trainer.fit.train_dataloader.context=5"}),
            "trainer.fit.train_dataloader.context: the fashion_mnist dataset does not read it "
            "(it reads: split, batch_size, path, shuffle)");
  EXPECT_EQ(error_of({"trainer.fit.val_dataloader={dataset: fashion_mnist, val_fraction: 0.5}"}),
            "trainer.fit.val_dataloader.val_fraction: the fashion_mnist dataset does not read it "
            "(it reads: split, batch_size, path, shuffle)");
  const std::string gpt =
      "trainer.init.model={name: gpt, vocab_size: 256, max_position_embeddings: 16, "
      "num_hidden_layers: 1, num_heads: 1, hidden_size: 8}";
  EXPECT_EQ(error_of({gpt,
                      "trainer.fit.train_dataloader={dataset: text, path: c.txt, data_dir: d, "
                      "context: 8}"}),
            "trainer.fit.train_dataloader.data_dir: the text dataset does not read it (it reads: "
            "split, batch_size, context, path, val_fraction, shuffle)");
  EXPECT_EQ(error_of({gpt, "trainer.fit.train_dataloader={dataset: kjv, path: c.txt, context: 8}"}),
            "trainer.fit.train_dataloader.path: the kjv dataset does not read it (it reads: "
            "split, batch_size, context, data_dir, val_fraction, shuffle)");
}

// Training on the split validation reads is allowed, and said before the first step; the
// configs that keep the two apart get no such note.
TEST(Config, TrainingOnTheValidationDataIsSaid) {
  const auto notes_of = [](const std::vector<std::string>& overrides) {
    std::string all;
    for (const std::string& n : parse_config(kBase, overrides, "test.yaml").notes) all += n + "\n";
    return all;
  };
  const std::string note = "is the data validation reads too";
  EXPECT_EQ(notes_of({}).find(note), std::string::npos);
  // Fashion-MNIST validates on its test split unless a val_dataloader says otherwise.
  EXPECT_NE(notes_of({"trainer.fit.train_dataloader.split=test"})
                .find("trainer.fit.train_dataloader.split: 'test' " + note),
            std::string::npos);
  // Validating on the training split names the validation key and the split that fixes it.
  EXPECT_NE(notes_of({"trainer.fit.val_dataloader={dataset: fashion_mnist, split: train}"})
                .find("trainer.fit.val_dataloader.split: 'train' is the data training reads too: "
                      "the validation loss measures data the model trains on "
                      "(val_dataloader.split: test keeps them apart)"),
            std::string::npos);
  // Another directory holds other files.
  EXPECT_EQ(notes_of({"trainer.fit.val_dataloader={dataset: fashion_mnist, split: train, path: "
                      "/other}"})
                .find(note),
            std::string::npos);
  // Text: the held-out tail is `split: val`.
  const std::vector<std::string> text = {
      "trainer.init.model={name: gpt, vocab_size: 256, max_position_embeddings: 16, "
      "num_hidden_layers: 1, num_heads: 1, hidden_size: 8}",
      "trainer.fit.train_dataloader={dataset: text, path: corpus.txt, context: 8}"};
  EXPECT_EQ(notes_of(text).find(note), std::string::npos);
  std::vector<std::string> on_val = text;
  on_val.push_back("trainer.fit.train_dataloader.split=val");
  EXPECT_NE(notes_of(on_val).find("'val' " + note +
                                  ": the validation loss measures data the model trains on "
                                  "(train_dataloader.split: train keeps them apart)"),
            std::string::npos);
}

// Aliases that repeat aliases (7 levels of 10: 10^7 values from 1 KB) are refused at once,
// before any walk that would take minutes; a config's own aliases still read.
TEST(Config, AnAliasBombIsRefusedBeforeItIsWalked) {
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level < 8; ++level) {
    std::string name(1, 'a');
    name += std::to_string(level);
    bomb += name;
    bomb += ": &";
    bomb += name;
    bomb += " [";
    for (int i = 0; i < 10; ++i) {
      bomb += i ? ", *a" : "*a";
      bomb += std::to_string(level - 1);
    }
    bomb += "]\n";
  }
  EXPECT_EQ(config_error(bomb, {}),
            "c.yaml: more than 100000 values once its YAML aliases (*name) are expanded (no "
            "config holds this many; aliases that repeat aliases?)");
  EXPECT_EQ(
      config_error(std::string(kBase) + "    val_dataloader: &val {dataset: fashion_mnist}\n" +
                       "x-unused: [*val, *val]\n",
                   {"x-unused=null"}),
      "x-unused: unknown key (expected one of: trainer)");
  EXPECT_EQ(
      config_error(std::string(kBase) + "    val_dataloader: &val {dataset: fashion_mnist}\n"),
      "(no error)");
}

// A route this CPU cannot run is named by its key path once (not "precision.precision").
TEST(Config, AnUnavailableRouteIsNamedByItsKeyPath) {
  int refused = 0;
  for (const auto& named : precision::kMatmulRouteNames) {
    const std::string word(named.name);
    const std::string error = config_error(kBase, {"trainer.init.precision.matmul_route=" + word});
    if (error == "(no error)") continue;
    ++refused;
    EXPECT_EQ(error.rfind("trainer.init.precision.matmul_route: " + word +
                              " cannot multiply float16 values here: ",
                          0),
              0u)
        << error;
  }
  if (refused == 0) GTEST_SKIP() << "this CPU runs every route: no refusal to check";
}

}  // namespace
}  // namespace mantissa::config
