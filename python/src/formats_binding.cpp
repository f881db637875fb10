// The number formats on buffers: the format table as data, and bulk encode, decode and round
// through the library's codecs (numerics/convert.hpp), with the GIL released while they run.
// The Python layer (python/mantissa/_arrays.py) hands over C-contiguous arrays of the right
// dtype; this layer checks sizes and widths again before it touches memory. Large arrays are
// converted in chunks on all of OpenMP's threads (OMP_NUM_THREADS): element i gets the same
// bits as in one call, stochastic rounding included (its counter moves with the chunk).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "bindings.hpp"
#include "mantissa/error.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/format.hpp"
#include "mantissa/tensor/page_memory.hpp"

namespace py = pybind11;

namespace mantissa::python {
namespace {

using numerics::ConvertOptions;
using numerics::Format;
using numerics::FormatTraits;

py::dict format_row(const FormatTraits& t) {
  const numerics::Layout& l = t.layout;
  py::dict row;
  row["name"] = std::string(t.name);
  row["bits"] = l.total_bits();
  row["exponent_bits"] = l.exponent_bits;
  row["mantissa_bits"] = l.mantissa_bits;
  row["bias"] = l.bias;
  row["storage_bytes"] = t.storage_bytes;
  row["max"] = t.max;
  row["min_normal"] = t.min_normal;
  row["min_subnormal"] = t.min_subnormal;
  row["epsilon"] = t.epsilon;
  row["has_infinity"] = l.has_infinity();
  row["has_nan"] = l.has_nan();
  row["specials"] = std::string(numerics::specials_description(l));
  row["use"] = t.use == numerics::FormatUse::tensor          ? "tensor"
               : t.use == numerics::FormatUse::block_element ? "block_element"
                                                             : "block_scale";
  row["saturates_by_default"] = t.default_overflow == numerics::Overflow::saturate;
  row["safetensors_dtype"] = t.safetensors_dtype.empty()
                                 ? py::object(py::none())
                                 : py::str(std::string(t.safetensors_dtype));
  return row;
}

py::list formats() {
  py::list rows;
  for (const FormatTraits& t : numerics::kFormatTable) rows.append(format_row(t));
  return rows;
}

numerics::Rounding parse_rounding_or_throw(const std::string& word) {
  if (const auto r = numerics::parse_rounding(word)) return *r;
  std::string names;
  for (auto r : {numerics::Rounding::nearest_even, numerics::Rounding::toward_zero,
                 numerics::Rounding::stochastic}) {
    if (!names.empty()) names += ", ";
    names += numerics::rounding_name(r);
  }
  throw Error("rounding: '" + word + "' (expected one of: " + names + ")");
}

ConvertOptions convert_options(const std::string& rounding, std::uint64_t seed,
                               std::uint64_t counter, std::optional<bool> saturate) {
  ConvertOptions o;
  o.rounding = parse_rounding_or_throw(rounding);
  o.seed = seed;
  o.counter = counter;
  if (saturate)
    o.overflow = *saturate ? numerics::Overflow::saturate : numerics::Overflow::to_infinity;
  return o;
}

// A C-contiguous buffer of `itemsize`-byte elements (float32 ones when itemsize is 4 and
// `floats`; writable when asked), or a TypeError naming the argument.
py::buffer_info contiguous(const py::buffer& b, py::ssize_t itemsize, bool writable,
                           const char* what, bool floats = false) {
  py::buffer_info info = b.request(writable);
  if (floats && info.format != py::format_descriptor<float>::format()) {
    throw py::type_error(std::string(what) + ": buffer format '" + info.format +
                         "', expected float32 ('f')");
  }
  if (info.itemsize != itemsize) {
    throw py::type_error(std::string(what) + ": elements of " + std::to_string(info.itemsize) +
                         " bytes, expected " + std::to_string(itemsize));
  }
  py::ssize_t expected = itemsize;
  for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
    if (info.shape[d] != 1 && info.strides[d] != expected) {
      throw py::type_error(std::string(what) + ": not C-contiguous");
    }
    expected *= info.shape[d];
  }
  return info;
}

// fn(first, count) over [0, n) in chunks of at least kChunk elements, the chunks spread over
// the threads (one thread for arrays under two chunks: no start-up cost for small ones).
constexpr std::int64_t kChunk = std::int64_t{1} << 18;
template <class Fn>
void in_chunks(std::size_t n, Fn&& fn) {
  const auto total = static_cast<std::int64_t>(n);
  const std::int64_t chunks = std::max<std::int64_t>(1, total / kChunk);
  const std::int64_t per = (total + chunks - 1) / chunks;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t first = c * per;
    const std::int64_t count = std::min(per, total - first);
    if (count > 0) fn(static_cast<std::size_t>(first), static_cast<std::size_t>(count));
  }
}

// A large result goes around the caches: it would not stay in them anyway, and each line is
// then written without being read first.
numerics::Stores stores_for(std::size_t result_bytes) {
  return result_bytes >= tensor::kPageMemoryFrom ? numerics::Stores::streaming
                                                 : numerics::Stores::cached;
}

void check_sizes(const py::buffer_info& a, const py::buffer_info& b) {
  if (a.size != b.size) {
    throw py::value_error("out: " + std::to_string(b.size) + " elements, expected " +
                          std::to_string(a.size));
  }
}

void encode_into(const py::buffer& x, const py::buffer& out, const std::string& format,
                 const std::string& rounding, std::uint64_t seed, std::uint64_t counter,
                 std::optional<bool> saturate) {
  const Format f = numerics::parse_format_or_throw(format, "format");
  const ConvertOptions o = convert_options(rounding, seed, counter, saturate);
  const py::buffer_info src = contiguous(x, sizeof(float), false, "x", true);
  const py::buffer_info dst = contiguous(out, numerics::traits(f).storage_bytes, true, "out");
  check_sizes(src, dst);
  py::gil_scoped_release unlocked;
  const int bytes = numerics::traits(f).storage_bytes;
  const numerics::Stores stores = stores_for(static_cast<std::size_t>(dst.size) * bytes);
  in_chunks(static_cast<std::size_t>(src.size), [&](std::size_t first, std::size_t count) {
    ConvertOptions chunk = o;
    chunk.stores = stores;
    chunk.counter += first;
    numerics::encode_array(static_cast<const float*>(src.ptr) + first, count, f,
                           static_cast<char*>(dst.ptr) + first * bytes, chunk);
  });
}

void decode_into(const py::buffer& bits, const py::buffer& out, const std::string& format) {
  const Format f = numerics::parse_format_or_throw(format, "format");
  const py::buffer_info src = contiguous(bits, numerics::traits(f).storage_bytes, false, "bits");
  const py::buffer_info dst = contiguous(out, sizeof(float), true, "out", true);
  check_sizes(src, dst);
  py::gil_scoped_release unlocked;
  const int bytes = numerics::traits(f).storage_bytes;
  const numerics::Stores stores = stores_for(static_cast<std::size_t>(dst.size) * sizeof(float));
  in_chunks(static_cast<std::size_t>(src.size), [&](std::size_t first, std::size_t count) {
    numerics::decode_array(static_cast<const char*>(src.ptr) + first * bytes, count, f,
                           static_cast<float*>(dst.ptr) + first, stores);
  });
}

void round_inplace(const py::buffer& x, const std::string& format, const std::string& rounding,
                   std::uint64_t seed, std::uint64_t counter, std::optional<bool> saturate) {
  const Format f = numerics::parse_format_or_throw(format, "format");
  const ConvertOptions o = convert_options(rounding, seed, counter, saturate);
  const py::buffer_info data = contiguous(x, sizeof(float), true, "x", true);
  py::gil_scoped_release unlocked;
  in_chunks(static_cast<std::size_t>(data.size), [&](std::size_t first, std::size_t count) {
    ConvertOptions chunk = o;
    chunk.counter += first;
    numerics::round_to_format(static_cast<float*>(data.ptr) + first, count, f, chunk);
  });
}

}  // namespace

void bind_formats(py::module_& m) {
  m.def("formats", &formats, "The format table (`mantissa formats`), one dict per format");
  m.def("storage_bytes", [](const std::string& format) {
    return numerics::traits(numerics::parse_format_or_throw(format, "format")).storage_bytes;
  });
  m.def("check_rounding", [](const std::string& rounding) { parse_rounding_or_throw(rounding); });
  m.def("encode_into", &encode_into, py::arg("x"), py::arg("out"), py::arg("format"),
        py::arg("rounding"), py::arg("seed"), py::arg("counter"), py::arg("saturate"));
  m.def("decode_into", &decode_into, py::arg("bits"), py::arg("out"), py::arg("format"));
  m.def("round_inplace", &round_inplace, py::arg("x"), py::arg("format"), py::arg("rounding"),
        py::arg("seed"), py::arg("counter"), py::arg("saturate"));
}

}  // namespace mantissa::python
