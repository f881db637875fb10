#pragma once
// safetensors files: an 8-byte little-endian header length, a JSON header
// {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}},
// then the raw little-endian tensor bytes. dtypes: F32, F16, BF16, F8_E4M3, F8_E5M2;
// cbfloat16 tensors are stored as F32 values (the format has no safetensors dtype).
#include <cstdint>
#include <map>
#include <string>

#include "mantissa/tensor/tensor.hpp"

namespace mantissa::tensor {

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

// The file's bytes (what save writes), for writing elsewhere (atomic writes, tests).
std::string encode_safetensors(const std::map<std::string, Tensor>& tensors,
                               const std::map<std::string, std::string>& metadata = {});
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// Validates everything (header length, JSON, dtypes, shapes against byte ranges, ranges
// inside the file, no overlaps); a bad file throws mantissa::Error naming it and the problem.
SafetensorsFile decode_safetensors(const std::string& bytes, const std::string& what);
SafetensorsFile load_safetensors(const std::string& path);
// zlib's crc32 of the bytes `t` occupies in a safetensors file (its values in the stored
// dtype, little-endian): what a checkpoint records per tensor and verifies on load.
std::uint32_t stored_crc32(const Tensor& t);

}  // namespace mantissa::tensor
