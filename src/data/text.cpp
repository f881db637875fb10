#include <filesystem>

#include "mantissa/data/datasets.hpp"
#include "mantissa/error.hpp"
#include "mantissa/machine_memory.hpp"
#include "mantissa/read_file.hpp"
#include "mantissa/write_file.hpp"
#include "support/number_text.hpp"

namespace mantissa::data {
namespace {

ByteText from_bytes(const std::string& bytes, std::string source) {
  ByteText t;
  t.source = std::move(source);
  t.tokens.reserve(bytes.size());
  for (unsigned char c : bytes) t.tokens.push_back(c);
  return t;
}

}  // namespace

ByteText load_text_file(const std::string& path) {
  // Each byte is held twice while it becomes a token: as itself and as an int32 token.
  constexpr std::int64_t kMemoryPerByte = 1 + sizeof(std::int32_t);
  const std::int64_t memory = physical_memory_bytes();
  const std::int64_t bound = memory > 0 ? memory / kMemoryPerByte : INT64_MAX;
  const std::string bytes = read_file(path, "the text file", bound,
                                      "each byte takes " + std::to_string(kMemoryPerByte) +
                                          " bytes of memory as a token; this machine has " +
                                          std::to_string(memory) + " bytes");
  if (bytes.empty()) throw Error(path + ": the text file is empty");
  return from_bytes(bytes, path);
}

ByteText load_kjv(const std::string& data_dir, const CorpusProvider& provider) {
  namespace fs = std::filesystem;
  const fs::path cache = fs::path(data_dir) / "kjv.txt";
  std::error_code ec;
  if (fs::exists(cache, ec) && fs::file_size(cache, ec) > 0 && !ec) {
    return load_text_file(cache.string());
  }
  if (!provider) {
    throw Error("KJV corpus: " + cache.string() +
                " is not there and no corpus provider was given (the mantissa program supplies "
                "one that runs `bible` from Debian's bible-kjv)");
  }
  const std::string text = provider();
  if (text.size() < 1000000) {
    throw Error("KJV corpus: the provider gave " + std::to_string(text.size()) +
                " bytes, not the whole Bible");
  }
  fs::create_directories(data_dir, ec);
  if (ec) throw Error(data_dir + ": cannot create the data directory (" + ec.message() + ")");
  // Through a new temporary (O_EXCL, never through a link) renamed into place, so a cut-off run
  // leaves no half cache and nothing at the cache's path but a regular file is replaced.
  replace_file(cache.string(), text, "the KJV cache");
  return from_bytes(text, cache.string());
}

std::pair<ByteText, ByteText> split_by_position(const ByteText& text, double val_fraction) {
  if (!(val_fraction > 0 && val_fraction < 1)) {
    throw Error("val_fraction: " + support::value_text(val_fraction) + " must be in (0, 1)");
  }
  const auto cut =
      static_cast<std::size_t>(static_cast<double>(text.tokens.size()) * (1 - val_fraction));
  ByteText train{{text.tokens.begin(), text.tokens.begin() + static_cast<std::ptrdiff_t>(cut)},
                 text.source + " [train]"};
  ByteText val{{text.tokens.begin() + static_cast<std::ptrdiff_t>(cut), text.tokens.end()},
               text.source + " [val]"};
  return {train, val};
}

}  // namespace mantissa::data
