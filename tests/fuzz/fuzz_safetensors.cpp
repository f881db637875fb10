// libFuzzer harness: the safetensors reader, and the checkpoint metadata a decoded file
// carries. Every input must decode or end in a mantissa::Error; anything else (a crash, a
// sanitizer report, another exception) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "mantissa/error.hpp"
#include "mantissa/tensor/safetensors.hpp"
#include "mantissa/train/checkpoint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    const mantissa::tensor::SafetensorsFile f = mantissa::tensor::decode_safetensors(bytes, "fuzz");
    for (const auto& [name, t] : f.tensors) (void)mantissa::tensor::stored_crc32(t);
    mantissa::train::decode_checkpoint_meta(f.metadata, "fuzz");
  } catch (const mantissa::Error&) {
  }
  return 0;
}
