#include <zlib.h>

#include <fstream>
#include <sstream>

#include "mantissa/data/datasets.hpp"
#include "mantissa/error.hpp"

namespace mantissa::data {
namespace {

std::string missing_file_hint(const std::string& path) {
  if (path.rfind(kFashionMnistDir, 0) == 0) {
    return " (install Debian's dataset-fashion-mnist: apt-get install dataset-fashion-mnist, or "
           "run scripts/install-deps.sh)";
  }
  return "";
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open (missing or unreadable)" + missing_file_hint(path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string gunzip(const std::string& bytes, const std::string& path) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw Error(path + ": cannot start gzip decoding");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - z.avail_out);
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // input ended early
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) throw Error(path + ": gzip data is corrupt or truncated");
  return out;
}

}  // namespace

IdxArray load_idx(const std::string& path) {
  std::string bytes = read_all(path);
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
      static_cast<unsigned char>(bytes[1]) == 0x8b) {
    bytes = gunzip(bytes, path);
  }
  if (bytes.size() < 4)
    throw Error(path + ": truncated IDX file (" + std::to_string(bytes.size()) + " bytes)");
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  if (b[0] != 0 || b[1] != 0 || b[2] != 0x08) {
    char magic[32];
    std::snprintf(magic, sizeof(magic), "%02x %02x %02x %02x", b[0], b[1], b[2], b[3]);
    throw Error(path + ": wrong IDX magic " + magic +
                " (expected 00 00 08 <ndims>: unsigned bytes)");
  }
  const int ndims = b[3];
  if (ndims < 1 || ndims > 4) {
    throw Error(path + ": IDX file with " + std::to_string(ndims) +
                " dimensions (expected 1 to 4)");
  }
  // The IDX header: the 4-byte magic, then one 4-byte big-endian size per dimension.
  constexpr std::size_t kWord = 4;
  const std::size_t header = kWord + kWord * static_cast<std::size_t>(ndims);
  if (bytes.size() < header) throw Error(path + ": truncated IDX header");
  IdxArray a;
  std::int64_t count = 1;
  for (int i = 0; i < ndims; ++i) {
    const unsigned char* d = b + kWord + kWord * static_cast<std::size_t>(i);
    const std::int64_t dim = (std::int64_t{d[0]} << 24) | (d[1] << 16) | (d[2] << 8) | d[3];
    if (dim <= 0)
      throw Error(path + ": IDX dimension " + std::to_string(i) + " is " + std::to_string(dim));
    a.dims.push_back(dim);
    count *= dim;
  }
  const auto have = static_cast<std::int64_t>(bytes.size() - header);
  if (have != count) {
    throw Error(path + ": IDX data holds " + std::to_string(have) +
                " bytes but its dimensions need " + std::to_string(count) +
                (have < count ? " (truncated)" : " (trailing bytes)"));
  }
  a.values.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return a;
}

ImageDataset load_fashion_mnist(ImageSplit split, const std::string& dir) {
  const std::string prefix = dir + "/" + (split == ImageSplit::train ? "train" : "t10k");
  const IdxArray images = load_idx(prefix + "-images-idx3-ubyte.gz");
  const IdxArray labels = load_idx(prefix + "-labels-idx1-ubyte.gz");
  if (images.dims.size() != 3) {
    throw Error(prefix + "-images-idx3-ubyte.gz: " + std::to_string(images.dims.size()) +
                " dimensions (expected 3: count, rows, columns)");
  }
  if (labels.dims.size() != 1 || labels.dims[0] != images.dims[0]) {
    throw Error(prefix + "-labels-idx1-ubyte.gz: " + std::to_string(labels.dims[0]) +
                " labels for " + std::to_string(images.dims[0]) + " images");
  }
  ImageDataset d;
  d.channels = 1;  // grayscale
  d.height = images.dims[1];
  d.width = images.dims[2];
  const std::int64_t n = images.dims[0], pixels = d.height * d.width;
  std::vector<float> x(static_cast<std::size_t>(n * pixels));
  constexpr float kMean = 0.2860f, kStd = 0.3530f;
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = (images.values[i] / 255.0f - kMean) / kStd;
  d.images = tensor::Tensor::from_vector(x, {n, pixels});
  for (std::uint8_t l : labels.values) {
    if (l > 9)
      throw Error(prefix + "-labels-idx1-ubyte.gz: label " + std::to_string(l) + " outside 0..9");
    d.labels.push_back(l);
  }
  return d;
}

}  // namespace mantissa::data
