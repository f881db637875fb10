// Checkpoints: truncated files, a flipped header byte and a wrong tensor shape are refused;
// a crash between the temporary write and the rename leaves the previous one loadable;
// retention keeps the newest.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "mantissa/error.hpp"
#include "mantissa/nn/models.hpp"
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
  expect_refused(p, "truncated");
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

}  // namespace
}  // namespace mantissa::train
