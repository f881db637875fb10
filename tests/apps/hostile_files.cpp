// mantissa_hostile: builds the hostile input files of the command-line tests byte by byte,
// with its own JSON and zlib calls (never mantissa's writers), so the tests hold the program
// against files made independently of it.
//   mantissa_hostile set-meta IN OUT KEY VALUE       a checkpoint's __metadata__[KEY] = VALUE
//   mantissa_hostile set-meta-file IN OUT KEY FILE   the same, VALUE read from FILE
//   mantissa_hostile set-shape IN OUT TENSOR JSON    a tensor's "shape" in the header
//   mantissa_hostile append IN OUT N                 N zero bytes after the data
//   mantissa_hostile flip IN OUT                     the last data byte inverted (crc32 stale)
//   mantissa_hostile nan IN OUT TENSOR               element 0 NaN, its crc32 made to match
//   mantissa_hostile set-value IN OUT TENSOR V       element 0 = V (a float), crc32 to match
//   mantissa_hostile deep-header OUT DEPTH           a safetensors file whose header holds a
//                                                    list nested DEPTH deep, and no tensor
//   mantissa_hostile idx OUT [--gz] [--payload N] [--members K] DIM...
//                                                    an IDX file of unsigned bytes
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "gzip_member.hpp"

namespace {

using json = nlohmann::json;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

// A safetensors file as its three parts: the header JSON and the data (the length is
// recomputed on writing, padded with spaces to keep the data 8-byte aligned).
struct File {
  json header;
  std::string data;
};

File parse(const std::string& bytes) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes.at(i));
  return {json::parse(bytes.substr(8, n)), bytes.substr(8 + n)};
}

std::string unparse(const File& f) {
  std::string h = f.header.dump();
  while ((h.size() + 8) % 8 != 0) h.push_back(' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((h.size() >> (8 * i)) & 0xff);
  return out + h + f.data;
}

std::string crc_hex(const char* p, std::size_t n) {
  char b[16];
  std::snprintf(b, sizeof(b), "%08lx",
                crc32(0, reinterpret_cast<const Bytef*>(p), static_cast<uInt>(n)));
  return b;
}

int run(const std::vector<std::string>& a) {
  const std::string& cmd = a.at(0);
  if (cmd == "idx") {
    bool compress = false;
    long long payload = -1, members = 1;
    std::vector<std::uint64_t> dims;
    for (std::size_t i = 2; i < a.size(); ++i) {
      if (a[i] == "--gz") {
        compress = true;
      } else if (a[i] == "--payload") {
        payload = std::stoll(a.at(++i));
      } else if (a[i] == "--members") {
        members = std::stoll(a.at(++i));
      } else {
        dims.push_back(std::stoull(a[i]));
      }
    }
    std::string b = {0, 0, 8, static_cast<char>(dims.size())};
    unsigned long long count = 1;
    for (std::uint64_t d : dims) {
      for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<char>((d >> s) & 0xff));
      count *= d;  // wraps for the overflow case: the payload is then given
    }
    b += std::string(
        static_cast<std::size_t>(payload >= 0 ? payload : static_cast<long long>(count)), '\1');
    std::string out;
    if (!compress) {
      out = b;
    } else {  // `members` gzip members, each holding a part (gunzip concatenates them)
      const std::size_t part = (b.size() + members - 1) / members;
      for (std::size_t at = 0; at < b.size(); at += part)
        out += mantissa::testing::gzip_member(b.substr(at, part));
    }
    spit(a.at(1), out);
    return 0;
  }
  if (cmd == "deep-header") {  // written raw: a JSON library would recurse building it
    const std::size_t depth = std::stoul(a.at(2));
    std::string h = "{\"a\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
    while (h.size() % 8 != 0) h.push_back(' ');
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((h.size() >> (8 * i)) & 0xff);
    spit(a.at(1), out + h);
    return 0;
  }
  File f = parse(slurp(a.at(1)));
  const std::string& out = a.at(2);
  if (cmd == "set-meta") {
    f.header["__metadata__"][a.at(3)] = a.at(4);
  } else if (cmd == "set-meta-file") {
    f.header["__metadata__"][a.at(3)] = slurp(a.at(4));
  } else if (cmd == "set-shape") {
    f.header[a.at(3)]["shape"] = json::parse(a.at(4));
  } else if (cmd == "append") {
    f.data += std::string(std::stoul(a.at(3)), '\0');
  } else if (cmd == "flip") {
    f.data.back() = static_cast<char>(~f.data.back());
  } else if (cmd == "nan" || cmd == "set-value") {
    const json& t = f.header.at(a.at(3));
    const std::size_t begin = t.at("data_offsets")[0], end = t.at("data_offsets")[1];
    const float v = cmd == "nan" ? std::numeric_limits<float>::quiet_NaN() : std::stof(a.at(4));
    std::memcpy(f.data.data() + begin, &v, sizeof(v));
    json sums = json::parse(f.header["__metadata__"]["crc32"].get<std::string>());
    sums[a.at(3)] = crc_hex(f.data.data() + begin, end - begin);
    f.header["__metadata__"]["crc32"] = sums.dump();
  } else {
    throw std::runtime_error("unknown command " + cmd);
  }
  spit(out, unparse(f));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mantissa_hostile: %s\n", e.what());
    return 1;
  }
}
