#include "mantissa/tensor/safetensors.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "mantissa/checked.hpp"
#include "mantissa/error.hpp"
#include "mantissa/escaped_text.hpp"
#include "mantissa/read_file.hpp"
#include "mantissa/utf8_text.hpp"
#include "mantissa/write_file.hpp"
#include "support/untrusted_json.hpp"

namespace mantissa::tensor {
namespace {

using json = nlohmann::json;

// The largest header the safetensors format allows (its reference reader's limit).
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

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

// The header's entry for one tensor, checked: dtype known, shape a list of integers >= 0,
// data_offsets two integers, the byte count overflow-checked and equal to the span, the
// span inside the data.
struct Entry {
  std::string name;
  Format format = Format::float32;
  Shape shape;
  std::uint64_t begin = 0, end = 0;
};

std::string json_text(const json& v) {
  return support::describe_json(v);
}

Entry read_entry(const std::string& name, const json& v, const std::string& what,
                 std::uint64_t data_size) {
  const std::string at = what + ": tensor '" + name + "'";
  if (!v.is_object())
    throw Error(at + ": expected {dtype, shape, data_offsets}, got " + json_text(v));
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!v.contains(key)) throw Error(at + ": missing '" + key + "'");
  }
  Entry e;
  e.name = name;
  if (!v["dtype"].is_string())
    throw Error(at + ": dtype " + json_text(v["dtype"]) + " is not a string");
  e.format = format_of(v["dtype"].get<std::string>(), what, name);
  const json& shape = v["shape"];
  if (!shape.is_array() || shape.size() > static_cast<std::size_t>(kMaxDims)) {
    throw Error(at + ": shape " + json_text(shape) + " is not a list of at most " +
                std::to_string(kMaxDims) + " integers");
  }
  for (const json& d : shape) {
    if (!d.is_number_unsigned()) {
      throw Error(at + ": shape " + json_text(shape) + " holds " + json_text(d) +
                  ", not an integer >= 0");
    }
    if (d.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
      throw Error(at + ": shape " + json_text(shape) + " has a dimension past int64");
    }
    e.shape.push_back(d.get<std::int64_t>());
  }
  const json& offsets = v["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    throw Error(at + ": data_offsets " + json_text(offsets) +
                " is not a list of two integers >= 0 [begin, end]");
  }
  e.begin = offsets[0].get<std::uint64_t>();
  e.end = offsets[1].get<std::uint64_t>();
  const std::int64_t width = numerics::traits(e.format).storage_bytes;
  const std::optional<std::int64_t> elements = checked_product(e.shape);
  const std::optional<std::int64_t> need = elements ? checked_mul(*elements, width) : std::nullopt;
  const std::string described =
      "shape " + e.shape.to_string() + " of " + v["dtype"].get<std::string>();
  if (!need) throw Error(at + ": " + described + " has a byte size past int64");
  if (e.end < e.begin || e.end - e.begin != static_cast<std::uint64_t>(*need)) {
    throw Error(
        at + ": " + described + " needs " + std::to_string(*need) + " bytes (" +
        std::to_string(*elements) + " x " + std::to_string(width) + "), but data_offsets [" +
        std::to_string(e.begin) + ", " + std::to_string(e.end) + "] " +
        (e.end < e.begin ? "end before they begin" : "span " + std::to_string(e.end - e.begin)));
  }
  if (e.end > data_size) {
    throw Error(at + " ends at byte " + std::to_string(e.end) + " past the data's " +
                std::to_string(data_size) + " bytes: truncated");
  }
  return e;
}

std::map<std::string, std::string> read_metadata(const json& v, const std::string& what) {
  if (!v.is_object()) throw Error(what + ": __metadata__ is not a JSON object");
  std::map<std::string, std::string> out;
  for (const auto& [k, value] : v.items()) {
    if (!value.is_string()) throw Error(what + ": metadata '" + k + "' is not a string");
    out[k] = value.get<std::string>();
  }
  return out;
}

// The tensors' byte ranges must tile the data exactly: no overlap, no hole, nothing after
// the last (the safetensors rule that keeps a file from hiding a second one).
void check_coverage(std::vector<Entry>& entries, const std::string& what, std::uint64_t data_size) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
  });
  std::uint64_t at = 0;
  for (const Entry& e : entries) {
    if (e.begin < at) {
      throw Error(what + ": tensor '" + e.name + "' overlaps the tensor before it in the data");
    }
    if (e.begin > at) {
      throw Error(what + ": bytes " + std::to_string(at) + " to " + std::to_string(e.begin) +
                  " of the data belong to no tensor (a hole before '" + e.name + "')");
    }
    at = e.end;
  }
  if (at != data_size) {
    throw Error(what + ": " + std::to_string(data_size - at) +
                " bytes after the last tensor belong to no tensor");
  }
}

// Names and metadata a header can hold: UTF-8 text, and no tensor under the reserved name.
void check_header_text(const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__") {
      throw Error("safetensors: a tensor may not be named '__metadata__' (the header's metadata)");
    }
    if (!valid_utf8(name)) {
      throw Error("safetensors: tensor name '" + escape_controls(name) + "' is not UTF-8 text");
    }
    if (!t.defined())
      throw Error("safetensors: tensor '" + escape_controls(name) + "' is undefined");
  }
  for (const auto& [key, value] : metadata) {
    if (!valid_utf8(key) || !valid_utf8(value)) {
      throw Error("safetensors: metadata entry '" + escape_controls(key) + "' is not UTF-8 text");
    }
  }
}

}  // namespace

std::string encode_safetensors(const std::map<std::string, Tensor>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  check_header_text(tensors, metadata);
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
  replace_file(path, encode_safetensors(tensors, metadata), "a safetensors file");
}

SafetensorsFile decode_safetensors(const std::string& bytes, const std::string& what) {
  if (bytes.empty()) {  // (also what a file under /proc, whose size reads as 0, gives)
    throw Error(what + ": is empty (0 bytes: no safetensors header length; a file whose size " +
                "the system reports as 0, such as those under /proc, is no checkpoint)");
  }
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
  if (n > kMaxHeaderBytes) {
    throw Error(what + ": header length " + std::to_string(n) + " is more than the " +
                std::to_string(kMaxHeaderBytes) + " bytes safetensors allows");
  }
  const json header =
      support::parse_untrusted_json(std::string_view(bytes).substr(8, n), what + ": header");
  if (!header.is_object()) throw Error(what + ": header is not a JSON object");
  const std::size_t data_begin = 8 + n;
  const std::uint64_t data_size = bytes.size() - data_begin;
  SafetensorsFile f;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      f.metadata = read_metadata(value, what);
      continue;
    }
    entries.push_back(read_entry(name, value, what, data_size));
  }
  check_coverage(entries, what, data_size);
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.format);
    std::memcpy(t.raw_data(), bytes.data() + data_begin + e.begin,
                static_cast<std::size_t>(e.end - e.begin));
    f.tensors[e.name] = t;
  }
  return f;
}

std::uint32_t stored_crc32(const Tensor& t0) {
  const Tensor t = t0.to(stored_format(t0.format()));
  const auto bytes = static_cast<z_size_t>(t.numel()) * t.element_bytes();
  return static_cast<std::uint32_t>(
      crc32_z(crc32_z(0, nullptr, 0), static_cast<const Bytef*>(t.raw_data()), bytes));
}

SafetensorsFile load_safetensors(const std::string& path) {
  return decode_safetensors(read_file(path, "the safetensors file"), path);
}

}  // namespace mantissa::tensor
