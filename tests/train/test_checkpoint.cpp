// Checkpoints: truncated files, a flipped header byte, a flipped data byte (crc32), non-finite
// values, metadata out of range and a wrong tensor shape are refused naming the file; a crash
// between the temporary write and the rename leaves the previous one loadable; a corrupt
// newest checkpoint is named, with the newest one that loads; retention keeps the newest.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <cmath>

#include "mantissa/error.hpp"
#include "mantissa/nn/models.hpp"
#include "mantissa/tensor/safetensors.hpp"
#include "mantissa/train/checkpoint.hpp"

namespace mantissa::train {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("mantissa_ckpt_" + std::to_string(::getpid()));
  TempDir() { fs::remove_all(dir); }
  ~TempDir() { fs::remove_all(dir); }
};

Checkpoint sample() {
  Checkpoint c;
  c.tensors["model.w"] = tensor::Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  c.tensors["optimizer.w.exp_avg"] = tensor::Tensor::zeros({2, 3});
  c.metadata = {{"global_step", "5"},
                {"optimizer_step", "4"},
                {"config", "trainer: {}"},
                {"fp16_type", "float16"},
                {"train_loader", R"({"epoch": 1, "position": 6})"},
                {"rng", R"({"seed": 7, "counter": 8})"}};
  return c;
}

std::string read(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write(const std::string& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

void expect_refused(const std::string& path, const std::string& fragment) {
  try {
    load_checkpoint(path);
    FAIL() << "expected refusal: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << "names the file";
  }
}

TEST(Checkpoint, RoundTripAndMetadata) {
  TempDir t;
  const std::string p = save_checkpoint(t.dir.string(), 5, sample());
  EXPECT_EQ(fs::path(p).filename(), "ckpt-00000005.safetensors");
  const Checkpoint c = load_checkpoint(p);
  EXPECT_EQ(c.tensors.at("model.w").to_vector(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(c.metadata.at("global_step"), "5");
  EXPECT_EQ(c.metadata.at("format"), kCheckpointVersion);
}

TEST(Checkpoint, CorruptFilesAreRefusedWithAReason) {
  TempDir t;
  const std::string p = save_checkpoint(t.dir.string(), 1, sample());
  const std::string good = read(p);
  write(p, good.substr(0, good.size() - 7));
  expect_refused(p, "truncated");
  write(p, good.substr(0, 5));
  expect_refused(p, "truncated");
  std::string flipped = good;
  flipped[8] = static_cast<char>(flipped[8] ^ 0x55);  // the JSON header's first byte
  write(p, flipped);
  expect_refused(p, "header is not valid JSON");
  std::string huge = good;
  huge[7] = 0x7f;  // header length far past the end
  write(p, huge);
  expect_refused(p, "runs past the end of the file");
  write(p, "");
  expect_refused(p, "is empty (0 bytes");
}

TEST(Checkpoint, WrongTensorShapeIsRefusedOnLoadIntoAModel) {
  nn::MlpConfig c;
  c.input_size = 4;
  c.hidden_sizes = {3};
  c.num_classes = 2;
  nn::Mlp mlp(c, 1);
  auto state = mlp.state_dict();
  state["layers.0.weight"] = tensor::Tensor::zeros({3, 5});
  try {
    mlp.load_state_dict(state);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'layers.0.weight' has shape [3, 5], expected [3, 4]"),
              std::string::npos);
  }
}

TEST(Checkpoint, CrashBeforeRenameLeavesThePreviousLoadable) {
  TempDir t;
  const std::string first = save_checkpoint(t.dir.string(), 10, sample());
  // A crash after writing the temporary file of step 20, before its rename:
  write((t.dir / "ckpt-00000020.safetensors.tmp").string(), "partial garbage");
  EXPECT_EQ(latest_checkpoint(t.dir.string()), first);
  EXPECT_NO_THROW(load_checkpoint(*latest_checkpoint(t.dir.string())));
}

TEST(Checkpoint, RetentionKeepsTheNewest) {
  TempDir t;
  for (int s : {1, 2, 3, 4}) save_checkpoint(t.dir.string(), s, sample());
  apply_retention(t.dir.string(), 2);
  const auto left = list_checkpoints(t.dir.string());
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(fs::path(left[0]).filename(), "ckpt-00000003.safetensors");
  EXPECT_EQ(fs::path(left[1]).filename(), "ckpt-00000004.safetensors");
}

TEST(Checkpoint, OnlyTheNamesARunWritesAreCheckpointsAndTheyOrderByStep) {
  TempDir t;
  const std::string dir = t.dir.string();
  for (std::int64_t s : {99999999, 100000000, 100000001}) save_checkpoint(dir, s, sample());
  // A user's copies beside them, named as a run never names its checkpoints:
  const std::string best = save_checkpoint((t.dir / "sub").string(), 4, sample());
  for (const char* name : {"ckpt-best.safetensors", "ckpt-00000004-good.safetensors",
                           "ckpt-000000004.safetensors", "ckpt-1.safetensors",
                           "ckpt--0000004.safetensors", "ckpt-99999999999999999999.safetensors"}) {
    fs::copy_file(best, t.dir / name);
  }
  std::vector<std::string> names;
  for (const std::string& p : list_checkpoints(dir)) names.push_back(fs::path(p).filename());
  // By step (99,999,999 is older than 100,000,000 though its name sorts after it).
  EXPECT_EQ(names,
            (std::vector<std::string>{"ckpt-99999999.safetensors", "ckpt-100000000.safetensors",
                                      "ckpt-100000001.safetensors"}));
  apply_retention(dir, 1);
  EXPECT_FALSE(fs::exists(t.dir / "ckpt-99999999.safetensors"));
  EXPECT_FALSE(fs::exists(t.dir / "ckpt-100000000.safetensors"));
  EXPECT_TRUE(fs::exists(t.dir / "ckpt-100000001.safetensors"));
  EXPECT_TRUE(fs::exists(t.dir / "ckpt-best.safetensors"));  // never deleted
  EXPECT_TRUE(fs::exists(t.dir / "ckpt-00000004-good.safetensors"));
}

TEST(Checkpoint, LeftoverCleanupRemovesOnlyTheRunsOwnTemporaryFiles) {
  TempDir t;
  const std::string dir = t.dir.string();
  fs::create_directories(t.dir);
  write((t.dir / "ckpt-00000020.safetensors.tmp").string(), "partial");
  write((t.dir / "victim.txt").string(), "precious");
  fs::create_symlink(t.dir / "victim.txt", t.dir / "ckpt-00000030.safetensors.tmp");
  fs::create_directory(t.dir / "ckpt-00000040.safetensors.tmp");
  write((t.dir / "ckpt-x.safetensors.tmp").string(), "not the run's");
  EXPECT_EQ(remove_unfinished_checkpoints(dir), 1);
  EXPECT_FALSE(fs::exists(t.dir / "ckpt-00000020.safetensors.tmp"));
  EXPECT_TRUE(fs::is_symlink(t.dir / "ckpt-00000030.safetensors.tmp"));
  EXPECT_TRUE(fs::is_directory(t.dir / "ckpt-00000040.safetensors.tmp"));
  EXPECT_TRUE(fs::exists(t.dir / "ckpt-x.safetensors.tmp"));
}

// The data section's last byte inverted, as a disk or a copy might: the header still parses.
void flip_last_byte(const std::string& p) {
  std::string bytes = read(p);
  bytes.back() = static_cast<char>(~bytes.back());
  write(p, bytes);
}

TEST(Checkpoint, EveryTensorIsVerifiedAgainstItsCrc32) {
  TempDir t;
  const std::string p = save_checkpoint(t.dir.string(), 5, sample());
  flip_last_byte(p);
  expect_refused(p, ": tensor 'optimizer.w.exp_avg' fails its crc32 check (recorded ");
  expect_refused(p, "): the file is corrupt");
}

TEST(Checkpoint, NonFiniteWeightsAreRefused) {
  TempDir t;
  Checkpoint c = sample();
  c.tensors["model.w"] = tensor::Tensor::from_vector({1, 2, std::nanf(""), 4, INFINITY, 6}, {2, 3});
  const std::string p = save_checkpoint(t.dir.string(), 5, c);
  expect_refused(p,
                 ": tensor 'model.w' holds 2 non-finite values (inf or NaN; the first at "
                 "index 2): the checkpoint is unusable");
}

TEST(Checkpoint, MetadataIsTypedAndRangeCheckedNamingTheKey) {
  TempDir t;
  const struct {
    const char* key;
    const char* value;
    std::string message;
  } cases[] = {
      {"global_step", "-5", "checkpoint metadata 'global_step': '-5' (expected an integer >= 0)"},
      {"global_step", "5abc", "'global_step': '5abc' (expected an integer >= 0)"},
      {"global_step", "99999999999999999999", "'global_step': '99999999999999999999' (expected"},
      {"optimizer_step", "6", "'optimizer_step': '6' (expected at most global_step, 5)"},
      {"fp16_type", "float128",
       "'fp16_type': 'float128' (expected float32, float16, bfloat16 or cbfloat16)"},
      {"fp16_type", "float8_e4m3", "'fp16_type': 'float8_e4m3' (expected float32"},
      {"train_loader", R"({"epoch": -1, "position": 0})", "'train_loader': '{\"epoch\": -1"},
      {"rng", "[1, 2]", "'rng': '[1, 2]' (expected {\"seed\": <integer >= 0>"},
      {"config", "", "'config': '' (expected the run's YAML config)"},
      {"scaler", R"({"loss_scale": -1})", "checkpoint metadata 'scaler': scaler state: missing"},
  };
  for (const auto& c : cases) {
    Checkpoint ck = sample();
    ck.metadata[c.key] = c.value;
    expect_refused(save_checkpoint(t.dir.string(), 5, ck), c.message);
  }
  Checkpoint ck = sample();
  ck.metadata.erase("rng");
  expect_refused(save_checkpoint(t.dir.string(), 5, ck), "checkpoint metadata lacks 'rng'");
}

TEST(Checkpoint, MetadataRoundTrips) {
  CheckpointMeta m;
  m.global_step = 12;
  m.optimizer_step = 10;
  m.config = "trainer: {}";
  m.fp16_type = numerics::Format::cbfloat16;
  m.train_loader = {3, 17};
  m.rng = {0xffffffffffffffffull, 9};
  m.scaler = amp::ScalerState{};
  m.scaler->loss_scale = 4096;
  m.scaler->num_skipped_steps = 2;
  const CheckpointMeta back = decode_checkpoint_meta(encode_checkpoint_meta(m), "x");
  EXPECT_EQ(back.global_step, 12);
  EXPECT_EQ(back.optimizer_step, 10);
  EXPECT_EQ(back.fp16_type, numerics::Format::cbfloat16);
  EXPECT_EQ(back.train_loader.position, 17);
  EXPECT_EQ(back.rng.seed, 0xffffffffffffffffull);
  ASSERT_TRUE(back.scaler.has_value());
  EXPECT_EQ(back.scaler->loss_scale, 4096.0);
  EXPECT_EQ(back.scaler->num_skipped_steps, 2);
  EXPECT_TRUE(back.routes.empty());
  EXPECT_EQ(encode_checkpoint_meta(m).count("routes"), 0u);  // older readers see no new key
}

TEST(Checkpoint, RoutesInTheMetadataAreDocumentedLinesAndBadOnesAreRefused) {
  CheckpointMeta m;
  m.config = "trainer: {}";
  kernels::RouteRecord r;
  r.key = {64, 256, 64, false, true, numerics::Format::float16, 3, false};
  r.route = precision::MatmulRoute::fp32;
  r.gflops[static_cast<std::size_t>(precision::MatmulRoute::fp32)] = 77.5;
  m.routes = {r};
  std::map<std::string, std::string> meta = encode_checkpoint_meta(m);
  EXPECT_EQ(meta.at("routes"), "64 256 64 NT float16 3 thread fp32 0 77.5 0 0 0 0\n");
  const CheckpointMeta back = decode_checkpoint_meta(meta, "x");
  ASSERT_EQ(back.routes.size(), 1u);
  EXPECT_EQ(back.routes[0].key, r.key);
  EXPECT_EQ(back.routes[0].route, r.route);
  EXPECT_EQ(back.routes[0].gflops, r.gflops);
  for (const char* bad : {"64 256 64 NT float16 3 thread tiles 0 0 0 0 0 0\n",
                          "64 256 64 NT float16 3 thread fp32 0 nan 0 0 0\n", "garbage\n"}) {
    meta["routes"] = bad;
    try {
      decode_checkpoint_meta(meta, "ck.safetensors");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("ck.safetensors: checkpoint metadata 'routes'"),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("line 1 is not"), std::string::npos) << e.what();
    }
  }
}

// dist_ranks counts processes: 0 and -1 are refused with the same words (">= 1").
TEST(Checkpoint, AProcessCountBelowOneIsRefusedInOneWording) {
  CheckpointMeta m;
  m.config = "trainer: {}";
  std::map<std::string, std::string> meta = encode_checkpoint_meta(m);
  for (const char* bad : {"0", "-1", "1.0", "0x1"}) {
    meta["dist_ranks"] = bad;
    try {
      decode_checkpoint_meta(meta, "ck.safetensors");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), std::string("ck.safetensors: checkpoint metadata "
                                                   "'dist_ranks': '") +
                                           bad + "' (expected an integer >= 1)");
    }
  }
  meta["dist_ranks"] = "3";
  EXPECT_EQ(decode_checkpoint_meta(meta, "x").dist_ranks, 3);
}

TEST(Checkpoint, ACorruptNewestIsNeverSkippedAndThePreviousGoodOneIsNamed) {
  TempDir t;
  const std::string good = save_checkpoint(t.dir.string(), 3, sample());
  const std::string bad = save_checkpoint(t.dir.string(), 6, sample());
  flip_last_byte(bad);
  try {
    load_latest_checkpoint(t.dir.string());
    FAIL() << "the corrupt newest checkpoint loaded";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(bad + ": tensor 'optimizer.w.exp_avg' fails its crc32 check", 0), 0u) << m;
    EXPECT_NE(m.find(". The newest checkpoint that loads is " + good +
                     ": move the newer ones away (or delete them) and --resume latest takes it."),
              std::string::npos)
        << m;
  }
  flip_last_byte(good);
  try {
    load_latest_checkpoint(t.dir.string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("No older checkpoint in " + t.dir.string() + " loads either."),
        std::string::npos);
  }
  fs::remove(bad);
  fs::remove(good);
  EXPECT_FALSE(load_latest_checkpoint(t.dir.string()).has_value());
}

TEST(Checkpoint, AFileWrittenBeforeChecksumsLoadsMarkedUnverified) {
  TempDir t;
  fs::create_directories(t.dir);
  Checkpoint c = sample();
  c.metadata["format"] = kUnchecksummedVersion;
  const std::string p = (t.dir / "ckpt-00000001.safetensors").string();
  tensor::save_safetensors(p, c.tensors, c.metadata);  // no crc32, as version 1 wrote it
  const Checkpoint back = load_checkpoint(p);
  EXPECT_FALSE(back.checksummed);
  EXPECT_TRUE(load_checkpoint(save_checkpoint(t.dir.string(), 2, sample())).checksummed);
}

}  // namespace
}  // namespace mantissa::train
