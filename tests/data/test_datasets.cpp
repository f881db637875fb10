// IDX parsing on files the test writes (good, gzipped, truncated, wrong magic, wrong
// dimensions), missing-file messages, text splits, and loader determinism and resume.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "gzip_member.hpp"
#include "mantissa/data/loaders.hpp"
#include "mantissa/error.hpp"

namespace mantissa::data {
namespace {

namespace fs = std::filesystem;
using testing::gzip_member;

std::string idx_bytes(std::vector<std::int64_t> dims, std::int64_t payload,
                      unsigned char type = 0x08) {
  std::string b = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (std::int64_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<char>((d >> s) & 0xff));
  }
  for (std::int64_t i = 0; i < payload; ++i) b.push_back(static_cast<char>(i % 251));
  return b;
}

struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("mantissa_data_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& bytes, bool gz = false) {
    const std::string path = (dir / name).string();
    if (gz) {
      gzFile f = gzopen(path.c_str(), "wb");
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
      gzclose(f);
    } else {
      std::ofstream(path, std::ios::binary) << bytes;
    }
    return path;
  }
};

void expect_error(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
    FAIL() << "expected an error containing: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Idx, GoodFilesLoadPlainAndGzipped) {
  TempDir t;
  for (bool gz : {false, true}) {
    const IdxArray a = load_idx(t.write(gz ? "a.gz" : "a", idx_bytes({3, 2, 4}, 24), gz));
    EXPECT_EQ(a.dims, (std::vector<std::int64_t>{3, 2, 4}));
    ASSERT_EQ(a.values.size(), 24u);
    EXPECT_EQ(a.values[23], 23);
  }
}

TEST(Idx, BadFilesAreRefusedWithAReason) {
  TempDir t;
  expect_error(
      [&] {
        load_idx(t.write("short", idx_bytes({10, 4}, 39)));
      },
      "holds 39 bytes but its dimensions need 40 (truncated)");
  expect_error([&] { load_idx(t.write("long", idx_bytes({10, 4}, 41))); }, "(trailing bytes)");
  expect_error([&] { load_idx(t.write("magic", idx_bytes({4}, 4, 0x0d))); },
               "wrong IDX magic 00 00 0d 01");
  expect_error([&] { load_idx(t.write("dims", idx_bytes({}, 0))); },
               "0 dimensions (expected 1 to 4)");
  expect_error([&] { load_idx(t.write("hdr", std::string("\0\0\x08\x03\0\0", 6))); },
               "truncated IDX header");
  std::string gz = idx_bytes({100}, 100);
  expect_error(
      [&] {
        const std::string path = t.write("cut.gz", gz, true);
        fs::resize_file(path, fs::file_size(path) - 10);
        load_idx(path);
      },
      "gzip data is corrupt or truncated");
  expect_error([&] { load_idx((t.dir / "nope").string()); }, "cannot open");
}

TEST(Idx, DimensionsWhoseProductOverflowsAreRefusedBeforeAnyAllocation) {
  // 60000 x 350476688 x 3289581145 wraps int64 to a small number; unchecked it matched a
  // 64-byte payload's size.
  expect_error(
      [] {
        decode_idx(idx_bytes({60000, 350476688, 3289581145}, 64), "x.idx");
      },
      "x.idx: IDX dimensions 60000 x 350476688 x 3289581145 need more than the "
      "1073741824 bytes an IDX array may hold");
  expect_error(
      [] {
        decode_idx(idx_bytes({65536, 65536}, 0), "y.idx");
      },
      "y.idx: IDX dimensions 65536 x 65536 need more than the 1073741824 bytes");
}

TEST(Idx, AGzipBombStopsAtTheSizeItsHeaderDeclares) {
  // The header declares 6 bytes of data; the member inflates to 64 MB.
  const std::string bomb = gzip_member(idx_bytes({6}, 64 << 20));
  ASSERT_LT(bomb.size(), 1u << 20);  // 64 times smaller than what it inflates to
  expect_error([&] { decode_idx(bomb, "bomb.gz"); },
               "bomb.gz: gzip data inflates past the 14 bytes its IDX header declares (trailing "
               "data, or a decompression bomb)");
}

TEST(Idx, EveryGzipMemberIsReadAsGunzipReadsThem) {
  const std::string whole = idx_bytes({4, 5}, 20);
  const std::string two = gzip_member(whole.substr(0, 9)) + gzip_member(whole.substr(9));
  const IdxArray a = decode_idx(two, "two.gz");
  EXPECT_EQ(a.dims, (std::vector<std::int64_t>{4, 5}));
  EXPECT_EQ(a.values, decode_idx(whole, "plain").values);
  // A second member that adds bytes is data past the header's size, never ignored.
  expect_error([&] { decode_idx(gzip_member(whole) + gzip_member("x"), "extra.gz"); },
               "extra.gz: gzip data inflates past the 32 bytes its IDX header declares");
  expect_error([&] { decode_idx(gzip_member(whole) + "garbage", "junk.gz"); },
               "junk.gz: gzip data is corrupt or truncated");
}

TEST(Idx, ADirectoryIsNotAFile) {
  TempDir t;
  expect_error([&] { load_idx(t.dir.string()); }, ": is a directory, not the IDX file");
}

TEST(FashionMnist, WrongDimensionsAndCountsAreRefused) {
  TempDir t;
  t.write("train-images-idx3-ubyte.gz", idx_bytes({5, 16}, 80), true);  // 2 dims, not 3
  t.write("train-labels-idx1-ubyte.gz", idx_bytes({5}, 5), true);
  expect_error([&] { load_fashion_mnist(ImageSplit::train, t.dir.string()); },
               "2 dimensions (expected 3");
  t.write("train-images-idx3-ubyte.gz", idx_bytes({5, 4, 4}, 80), true);
  t.write("train-labels-idx1-ubyte.gz", idx_bytes({4}, 4), true);
  expect_error([&] { load_fashion_mnist(ImageSplit::train, t.dir.string()); },
               "4 labels for 5 images");
  t.write("t10k-images-idx3-ubyte.gz", idx_bytes({2, 3, 2}, 12), true);
  t.write("t10k-labels-idx1-ubyte.gz", idx_bytes({2}, 2), true);
  const ImageDataset test = load_fashion_mnist(ImageSplit::test, t.dir.string());
  EXPECT_EQ(test.size(), 2);  // the t10k files, with their own shape
  EXPECT_EQ(test.channels * test.height * test.width, 6);
  EXPECT_EQ(test.height, 3);
}

TEST(FashionMnist, MissingPackageIsNamed) {
  expect_error([] { load_idx(std::string(kFashionMnistDir) + "/no-such-file.gz"); },
               "apt-get install dataset-fashion-mnist");
}

TEST(FashionMnist, RealFilesLoad) {
  const ImageDataset test = load_fashion_mnist(ImageSplit::test);
  EXPECT_EQ(test.size(), 10000);
  EXPECT_EQ(test.height, 28);
  EXPECT_EQ(test.images.dim(1), 784);
}

TEST(Text, SplitByPositionAndKjv) {
  TempDir t;
  const ByteText text = load_text_file(t.write("t.txt", "abcdefghij"));
  auto [train, val] = split_by_position(text, 0.2);
  EXPECT_EQ(train.tokens.size(), 8u);
  EXPECT_EQ(val.tokens, (std::vector<std::int32_t>{'i', 'j'}));
  expect_error([&] { load_text_file(t.write("empty.txt", "")); }, "empty");
}

TEST(Text, KjvIsTakenFromTheProviderOnceThenFromTheCache) {
  TempDir t;
  const std::string data = (t.dir / "data").string();
  expect_error([&] { load_kjv(data, {}); }, "no corpus provider");
  const std::string bible = "Genesis 1:1 In the beginning\n" + std::string(2000000, 'x');
  int calls = 0;
  const CorpusProvider provider = [&] {
    ++calls;
    return bible;
  };
  const ByteText first = load_kjv(data, provider);
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(first.tokens.size(), bible.size());
  EXPECT_EQ(first.tokens[0], 'G');
  EXPECT_TRUE(fs::exists(fs::path(data) / "kjv.txt"));  // cached
  const ByteText again = load_kjv(data, provider);
  EXPECT_EQ(calls, 1);  // from the cache, the provider untouched
  EXPECT_EQ(again.tokens, first.tokens);
  expect_error([&] { load_kjv((t.dir / "short").string(), [] { return std::string("Gen"); }); },
               "not the whole Bible");
}

TEST(Text, TheKjvCacheIsNeverWrittenThroughALink) {
  TempDir t;
  const fs::path data = t.dir / "data";
  fs::create_directories(data);
  const std::string victim = t.write("victim.txt", "precious");
  // Links where the cache or an old temporary would go: neither is followed.
  fs::create_symlink(victim, data / "kjv.txt.tmp");
  const std::string bible = "Genesis 1:1 In the beginning\n" + std::string(2000000, 'x');
  const ByteText text = load_kjv(data.string(), [&] { return bible; });
  EXPECT_EQ(text.tokens.size(), bible.size());
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(data / "kjv.txt")));
  EXPECT_EQ(fs::file_size(data / "kjv.txt"), bible.size());
  std::ifstream in(victim);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "precious");

  const fs::path other = t.dir / "other";
  fs::create_directories(other);
  fs::create_symlink(t.dir / "absent.txt", other / "kjv.txt");  // a dangling link as the cache
  expect_error([&] { load_kjv(other.string(), [&] { return bible; }); }, "is a symbolic link");
  EXPECT_FALSE(fs::exists(t.dir / "absent.txt"));
}

ImageDataset tiny_images(std::int64_t n) {
  ImageDataset d;
  std::vector<float> x;
  for (std::int64_t i = 0; i < n; ++i) {
    x.push_back(static_cast<float>(i));
    d.labels.push_back(static_cast<std::int32_t>(i % 10));
  }
  d.images = tensor::Tensor::from_vector(x, {n, 1});
  d.height = d.width = 1;
  return d;
}

std::vector<float> drain(ImageLoader& l, int batches) {
  std::vector<float> out;
  for (int i = 0; i < batches; ++i) {
    for (float v : l.next().x.to_vector()) out.push_back(v);
  }
  return out;
}

TEST(Loaders, SameSeedSameBatchesAndResumeGivesTheRemainingSequence) {
  const ImageDataset d = tiny_images(103);
  ImageLoader a(d, 10, true, 42, true), b(d, 10, true, 42, true), other(d, 10, true, 43, true);
  const std::vector<float> straight = drain(a, 35);  // 3.5 epochs of 10 batches
  EXPECT_EQ(drain(b, 35), straight);
  EXPECT_NE(drain(other, 35), straight);
  // Each epoch is a permutation: 10 batches, 100 distinct of the 103 examples.
  std::vector<float> first(straight.begin(), straight.begin() + 100);
  std::sort(first.begin(), first.end());
  EXPECT_EQ(std::unique(first.begin(), first.end()), first.end());
  // Stop after 17 batches, restore the state into a fresh loader, continue.
  ImageLoader c(d, 10, true, 42, true);
  std::vector<float> resumed = drain(c, 17);
  const LoaderState s = c.state();
  ImageLoader fresh(d, 10, true, 42, true);
  fresh.set_state(s);
  for (float v : drain(fresh, 18)) resumed.push_back(v);
  EXPECT_EQ(resumed, straight);
}

TEST(Loaders, TextWindowsAreShiftedByOneAndResume) {
  ByteText text;
  for (int i = 0; i < 1000; ++i) text.tokens.push_back(i % 256);
  text.source = "synthetic";
  TextLoader a(text, 16, 4, true, 7);
  EXPECT_EQ(a.windows(), 62);  // (1000 - 1) / 16
  const TextBatch b = a.next();
  for (std::size_t i = 0; i + 1 < 16; ++i) EXPECT_EQ(b.targets[i], b.inputs[i + 1]);
  std::vector<std::int32_t> straight;
  TextLoader x(text, 16, 4, true, 7);
  for (int i = 0; i < 40; ++i) {
    auto n = x.next();
    straight.insert(straight.end(), n.inputs.begin(), n.inputs.end());
  }
  TextLoader y(text, 16, 4, true, 7);
  std::vector<std::int32_t> resumed;
  for (int i = 0; i < 23; ++i) {
    auto n = y.next();
    resumed.insert(resumed.end(), n.inputs.begin(), n.inputs.end());
  }
  TextLoader z(text, 16, 4, true, 7);
  z.set_state(y.state());
  for (int i = 0; i < 17; ++i) {
    auto n = z.next();
    resumed.insert(resumed.end(), n.inputs.begin(), n.inputs.end());
  }
  EXPECT_EQ(resumed, straight);
  expect_error([&] { TextLoader(text, 500, 4, true, 1); }, "fewer than one batch");
  // A text made in code, with no source named: the message still says what it is about.
  ByteText unnamed;
  unnamed.tokens.assign(10, 1);
  expect_error([&] { TextLoader(unnamed, 16, 1, true, 1); },
               "text loader: 10 tokens make 0 windows of context 16, fewer than one batch of 1");
}

TEST(ImageLoaderMisuse, ImagesAndLabelsOfDifferentCountsAreRefused) {
  // The library audit of 2026-11-28: 3 image rows and 100,000 labels read past the images.
  ImageDataset d;
  d.images = tensor::Tensor::zeros(tensor::Shape{3, 4});
  d.labels.assign(100000, 1);
  std::string e;
  try {
    ImageLoader(d, 50000, false, 1, false);
  } catch (const Error& x) {
    e = x.what();
  }
  EXPECT_NE(e.find("images of shape [3, 4] for 100000 labels"), std::string::npos) << e;
  e.clear();
  try {
    epoch_order(-5, 1, 0, true);
  } catch (const Error& x) {
    e = x.what();
  }
  EXPECT_NE(e.find("epoch_order: -5 items (expected >= 0)"), std::string::npos) << e;
}

}  // namespace
}  // namespace mantissa::data
