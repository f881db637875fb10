// IDX arrays of unsigned bytes, plain or gzipped, from untrusted files: every size is
// overflow-checked and bounded, and decompression stops at the size the header declares.
#include <zlib.h>

#include <cstdio>
#include <optional>

#include "mantissa/checked.hpp"
#include "mantissa/data/datasets.hpp"
#include "mantissa/error.hpp"
#include "mantissa/machine_memory.hpp"
#include "mantissa/read_file.hpp"

namespace mantissa::data {
namespace {

constexpr std::size_t kWord = 4;  // the magic, then one 4-byte big-endian size per dimension

std::string missing_file_hint(const std::string& path) {
  if (path.rfind(kFashionMnistDir, 0) == 0) {
    return " (install Debian's dataset-fashion-mnist: apt-get install dataset-fashion-mnist, or "
           "run scripts/install-deps.sh)";
  }
  return "";
}

// A byte of an IDX array is held as the inflated bytes, the array's copy, a float32 and the
// tensor's float32 while a dataset is built.
constexpr std::int64_t kMemoryPerIdxByte = 10;

std::string dims_text(const std::vector<std::int64_t>& dims) {
  std::string out;
  for (std::int64_t d : dims) out += (out.empty() ? "" : " x ") + std::to_string(d);
  return out;
}

// The magic and dimensions at the start of `b` (at least 4 bytes), checked; nullopt while
// fewer bytes than the header needs are there.
struct Header {
  std::vector<std::int64_t> dims;
  std::int64_t bytes = 0;  // header + data: the whole file's size
};
std::optional<Header> read_header(const std::string& b, const std::string& what) {
  const auto* u = reinterpret_cast<const unsigned char*>(b.data());
  if (u[0] != 0 || u[1] != 0 || u[2] != 0x08) {
    char magic[32];
    std::snprintf(magic, sizeof(magic), "%02x %02x %02x %02x", u[0], u[1], u[2], u[3]);
    throw Error(what + ": wrong IDX magic " + magic +
                " (expected 00 00 08 <ndims>: unsigned bytes)");
  }
  const int ndims = u[3];
  if (ndims < 1 || ndims > 4) {
    throw Error(what + ": IDX file with " + std::to_string(ndims) +
                " dimensions (expected 1 to 4)");
  }
  const std::size_t header = kWord + kWord * static_cast<std::size_t>(ndims);
  if (b.size() < header) return std::nullopt;
  Header h;
  for (int i = 0; i < ndims; ++i) {
    const unsigned char* d = u + kWord + kWord * static_cast<std::size_t>(i);
    const std::int64_t dim = (std::int64_t{d[0]} << 24) | (d[1] << 16) | (d[2] << 8) | d[3];
    if (dim <= 0)
      throw Error(what + ": IDX dimension " + std::to_string(i) + " is " + std::to_string(dim));
    h.dims.push_back(dim);
  }
  const std::optional<std::int64_t> count = checked_product(h.dims);
  if (!count || *count > kMaxIdxBytes) {
    throw Error(what + ": IDX dimensions " + dims_text(h.dims) + " need more than the " +
                std::to_string(kMaxIdxBytes) + " bytes an IDX array may hold");
  }
  // Checked before anything is inflated: a small gzip file may declare a large array.
  const std::int64_t memory = physical_memory_bytes();
  if (memory > 0 && *count > memory / kMemoryPerIdxByte) {
    throw Error(what + ": IDX dimensions " + dims_text(h.dims) + " declare " +
                std::to_string(*count) + " values, which as training data take about " +
                std::to_string(kMemoryPerIdxByte) + " bytes of memory each: more than this " +
                "machine's " + std::to_string(memory) + " bytes");
  }
  h.bytes = static_cast<std::int64_t>(header) + *count;
  return h;
}

// Inflates gzip data (every member, as gunzip does), stopping with an error as soon as the
// output passes the size the IDX header inside declares: a bomb is refused after at most
// that many bytes (and never more than kMaxIdxBytes).
std::string gunzip(const std::string& bytes, const std::string& what) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw Error(what + ": cannot start gzip decoding");
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&z};
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  std::size_t left = bytes.size();
  std::string out;
  std::optional<Header> header;
  std::int64_t limit = kMaxIdxBytes + static_cast<std::int64_t>(kWord * 5);
  char buf[1 << 16];
  int rc = Z_OK;
  for (;;) {
    if (z.avail_in == 0) {  // zlib counts input in uInt: feed large inputs in parts
      const std::size_t part = std::min<std::size_t>(left, 1u << 30);
      z.avail_in = static_cast<uInt>(part);
      left -= part;
    }
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) break;
    out.append(buf, sizeof(buf) - z.avail_out);
    if (!header && out.size() >= kWord) {
      header = read_header(out, what);
      if (header) limit = header->bytes;
    }
    if (static_cast<std::int64_t>(out.size()) > limit) {
      throw Error(what + ": gzip data inflates past the " + std::to_string(limit) +
                  " bytes its IDX header declares (trailing data, or a decompression bomb)");
    }
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0 && left == 0) return out;
      if (inflateReset(&z) != Z_OK) break;  // another gzip member follows
      continue;
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0 && left == 0) break;  // input ended early
  }
  throw Error(what + ": gzip data is corrupt or truncated");
}

}  // namespace

IdxArray decode_idx(const std::string& file_bytes, const std::string& what) {
  const bool gz = file_bytes.size() >= 2 && static_cast<unsigned char>(file_bytes[0]) == 0x1f &&
                  static_cast<unsigned char>(file_bytes[1]) == 0x8b;
  const std::string bytes = gz ? gunzip(file_bytes, what) : file_bytes;
  if (bytes.size() < kWord)
    throw Error(what + ": truncated IDX file (" + std::to_string(bytes.size()) + " bytes)");
  const std::optional<Header> h = read_header(bytes, what);
  if (!h) throw Error(what + ": truncated IDX header");
  const auto have = static_cast<std::int64_t>(bytes.size());
  const std::int64_t data_begin = static_cast<std::int64_t>(kWord * (h->dims.size() + 1));
  const std::int64_t need = h->bytes - data_begin, got = have - data_begin;
  if (got != need) {
    throw Error(what + ": IDX data holds " + std::to_string(got) +
                " bytes but its dimensions need " + std::to_string(need) +
                (got < need ? " (truncated)" : " (trailing bytes)"));
  }
  IdxArray a;
  a.dims = h->dims;
  a.values.assign(bytes.begin() + data_begin, bytes.end());
  return a;
}

IdxArray load_idx(const std::string& path) {
  std::string bytes;
  try {
    bytes = read_file(path, "the IDX file", kMaxIdxBytes + static_cast<std::int64_t>(kWord * 5));
  } catch (const Error& e) {
    throw Error(e.what() + missing_file_hint(path));
  }
  return decode_idx(bytes, path);
}

ImageDataset load_fashion_mnist(ImageSplit split, const std::string& dir) {
  const std::string prefix = dir + "/" + (split == ImageSplit::train ? "train" : "t10k");
  const IdxArray images = load_idx(prefix + "-images-idx3-ubyte.gz");
  const IdxArray labels = load_idx(prefix + "-labels-idx1-ubyte.gz");
  if (images.dims.size() != 3) {
    throw Error(prefix + "-images-idx3-ubyte.gz: " + std::to_string(images.dims.size()) +
                " dimensions (expected 3: count, rows, columns)");
  }
  if (labels.dims.size() != 1) {
    throw Error(prefix + "-labels-idx1-ubyte.gz: labels of dimensions " + dims_text(labels.dims) +
                " (expected one dimension: one label per image)");
  }
  if (labels.dims[0] != images.dims[0]) {
    throw Error(prefix + "-labels-idx1-ubyte.gz: " + std::to_string(labels.dims[0]) +
                " labels for " + std::to_string(images.dims[0]) + " images");
  }
  ImageDataset d;
  d.channels = 1;  // grayscale
  d.height = images.dims[1];
  d.width = images.dims[2];
  const std::int64_t n = images.dims[0], pixels = d.height * d.width;  // bounded by the reader
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
