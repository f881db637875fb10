#pragma once
// Datasets from real files: IDX arrays (plain or .gz; Fashion-MNIST from Debian's
// dataset-fashion-mnist) and byte-level text (any file, or the KJV corpus, whose text the
// program supplies). A missing file or package is an error naming the file and the package.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "mantissa/tensor/tensor.hpp"

namespace mantissa::data {

// An IDX file of unsigned bytes (type 0x08): its dimensions and values.
struct IdxArray {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> values;
};
// The most bytes an IDX array may hold (Fashion-MNIST's training images: 47 MB). Larger
// headers are refused before anything is allocated or inflated.
inline constexpr std::int64_t kMaxIdxBytes = std::int64_t{1} << 30;
// Reads and validates: magic (0, 0, 0x08, ndims 1..4), dimensions (their product
// overflow-checked and at most kMaxIdxBytes), exact length. Files starting with the gzip
// magic are inflated first (every member, as gunzip does), never past the size the header
// declares. Errors name `what` (the file) and the problem.
IdxArray decode_idx(const std::string& file_bytes, const std::string& what);
IdxArray load_idx(const std::string& path);

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Images as float32 rows [n, channels * height * width] normalized by the training set's
// mean and standard deviation (0.2860, 0.3530), and int32 labels 0..9.
struct ImageDataset {
  tensor::Tensor images;  // [n, channels * height * width]
  std::vector<std::int32_t> labels;
  std::int64_t channels = 1, height = 0, width = 0;
  std::int64_t size() const { return static_cast<std::int64_t>(labels.size()); }
};
// Fashion-MNIST's two file sets: train-* (60,000 images) and t10k-* (10,000).
enum class ImageSplit { train, test };
// Checks that images and labels agree in count.
ImageDataset load_fashion_mnist(ImageSplit split, const std::string& dir = kFashionMnistDir);

// A byte-level corpus (vocabulary 256).
struct ByteText {
  std::vector<std::int32_t> tokens;
  std::string source;
};
ByteText load_text_file(const std::string& path);
// Supplies a corpus's whole text (the mantissa program runs `bible Gen1:1-Rev22:21` from
// Debian's bible-kjv); throws mantissa::Error when it cannot.
using CorpusProvider = std::function<std::string()>;
// The KJV Bible, cached once as <data_dir>/kjv.txt: read from the cache when it is there,
// else taken from `provider` (which must then be set) and cached.
ByteText load_kjv(const std::string& data_dir, const CorpusProvider& provider);
// Split by position: the first (1 - val_fraction) of the tokens, and the rest.
std::pair<ByteText, ByteText> split_by_position(const ByteText& text, double val_fraction);

}  // namespace mantissa::data
