#include "mantissa/tensor/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "mantissa/error.hpp"

namespace mantissa::tensor {
namespace {

using json = nlohmann::json;

// Formats without a safetensors dtype (cbfloat16) are written as their float32 values.
Format stored_format(Format f) {
  return numerics::traits(f).safetensors_dtype.empty() ? Format::float32 : f;
}

Format format_of(const std::string& dtype, const std::string& what, const std::string& name) {
  if (const std::optional<Format> f = numerics::format_of_safetensors_dtype(dtype)) return *f;
  std::string dtypes;
  for (const auto& t : numerics::kFormatTable) {
    if (!t.safetensors_dtype.empty())
      dtypes += (dtypes.empty() ? "" : ", ") + std::string(t.safetensors_dtype);
  }
  throw Error(what + ": tensor '" + name + "' has unsupported dtype '" + dtype +
              "' (expected one of: " + dtypes + ")");
}

}  // namespace

std::string encode_safetensors(const std::map<std::string, Tensor>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  std::string data;
  for (const auto& [name, t0] : tensors) {
    const Tensor t = t0.to(stored_format(t0.format()));
    const std::size_t bytes = static_cast<std::size_t>(t.numel()) * t.element_bytes();
    std::vector<std::int64_t> shape(t.shape().begin(), t.shape().end());
    header[name] = {{"dtype", numerics::traits(t.format()).safetensors_dtype},
                    {"shape", shape},
                    {"data_offsets", {data.size(), data.size() + bytes}}};
    data.append(static_cast<const char*>(t.raw_data()), bytes);
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string h = header.dump();
  while ((h.size() + 8) % 8 != 0) h.push_back(' ');  // keep the data 8-byte aligned
  std::string out(8, '\0');
  const std::uint64_t n = h.size();
  for (int i = 0; i < 8; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + h + data;
}

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(path + ": cannot open for writing");
  const std::string bytes = encode_safetensors(tensors, metadata);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw Error(path + ": write failed");
}

SafetensorsFile decode_safetensors(const std::string& bytes, const std::string& what) {
  if (bytes.size() < 8)
    throw Error(what + ": truncated (" + std::to_string(bytes.size()) +
                " bytes, no header length)");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  if (n > bytes.size() - 8) {
    throw Error(what + ": header length " + std::to_string(n) + " runs past the end of the file (" +
                std::to_string(bytes.size()) + " bytes): truncated or not safetensors");
  }
  json header;
  try {
    header = json::parse(bytes.substr(8, n));
  } catch (const json::exception& e) {
    throw Error(what + ": header is not valid JSON (" + e.what() + ")");
  }
  if (!header.is_object()) throw Error(what + ": header is not a JSON object");
  const std::size_t data_begin = 8 + n, data_size = bytes.size() - data_begin;
  SafetensorsFile f;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) throw Error(what + ": metadata '" + k + "' is not a string");
        f.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    try {
      const Format fmt = format_of(entry.at("dtype").get<std::string>(), what, name);
      Shape shape;
      for (const auto& d : entry.at("shape")) shape.push_back(d.get<std::int64_t>());
      const auto begin = entry.at("data_offsets").at(0).get<std::uint64_t>();
      const auto end = entry.at("data_offsets").at(1).get<std::uint64_t>();
      const std::uint64_t expected =
          static_cast<std::uint64_t>(shape.numel()) * numerics::traits(fmt).storage_bytes;
      if (end < begin || end - begin != expected) {
        throw Error(what + ": tensor '" + name + "' of shape " + shape.to_string() + " needs " +
                    std::to_string(expected) + " bytes but its data_offsets span " +
                    std::to_string(end - begin));
      }
      if (end > data_size) {
        throw Error(what + ": tensor '" + name + "' ends at byte " + std::to_string(end) +
                    " past the data's " + std::to_string(data_size) + " bytes: truncated");
      }
      ranges.emplace_back(begin, end);
      Tensor t = Tensor::empty(shape, fmt);
      std::memcpy(t.raw_data(), bytes.data() + data_begin + begin,
                  static_cast<std::size_t>(expected));
      f.tensors[name] = t;
    } catch (const json::exception& e) {
      throw Error(what + ": entry '" + name + "' is malformed (" + e.what() + ")");
    }
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) throw Error(what + ": tensors overlap in the data");
  }
  return f;
}

SafetensorsFile load_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open (missing or unreadable)");
  std::ostringstream s;
  s << in.rdbuf();
  return decode_safetensors(s.str(), path);
}

}  // namespace mantissa::tensor
