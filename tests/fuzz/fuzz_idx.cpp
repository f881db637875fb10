// libFuzzer harness: the IDX reader (plain and gzipped). Every input must decode or end in a
// mantissa::Error; anything else (a crash, a sanitizer report, another exception) is a
// finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "mantissa/data/datasets.hpp"
#include "mantissa/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    mantissa::data::decode_idx(bytes, "fuzz");
  } catch (const mantissa::Error&) {
  }
  return 0;
}
