// Block-scaled quantization from Python (numerics/block_scaling.hpp): quantize_blocks_into
// takes a C-contiguous 2-D float32 array and returns the element codes, the scales and the
// dequantized values, with the GIL released while the quantizer runs. The recipe, format,
// rule and rounding words become enums here, where they enter the program.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "mantissa/error.hpp"
#include "mantissa/names.hpp"
#include "mantissa/numerics/block_scaling.hpp"

namespace py = pybind11;

namespace mantissa::python {
namespace {

using numerics::BlockQuantized;

enum class BlockRecipe : std::uint8_t { mx, nvfp4, fp8_blocks };
constexpr NameTable<BlockRecipe, 3> kBlockRecipeNames = {{
    {"mx", BlockRecipe::mx},
    {"nvfp4", BlockRecipe::nvfp4},
    {"fp8_blocks", BlockRecipe::fp8_blocks},
}};

template <class E, std::size_t N>
E parse_or_throw(const NameTable<E, N>& table, const std::string& word, const char* what) {
  for (const auto& n : table) {
    if (n.name == word) return n.value;
  }
  throw Error(std::string(what) + ": '" + word + "' (expected one of: " + names_of(table) + ")");
}

numerics::Rounding rounding_or_throw(const std::string& word) {
  if (const auto r = numerics::parse_rounding(word)) return *r;
  throw Error("rounding: '" + word + "' (expected one of: nearest_even, toward_zero, stochastic)");
}

// A new numpy uint8 array holding a copy of `v`.
template <class Bytes>
py::array_t<std::uint8_t> bytes_array(const Bytes& v) {
  py::array_t<std::uint8_t> a(std::vector<py::ssize_t>{static_cast<py::ssize_t>(v.size())},
                              std::vector<py::ssize_t>{1});
  if (!v.empty()) std::memcpy(a.mutable_data(), v.data(), v.size());
  return a;
}

py::dict quantize_blocks(const py::array_t<float, py::array::c_style>& x, const std::string& recipe,
                         const std::string& element, const std::string& rule,
                         std::pair<std::int64_t, std::int64_t> tile, const std::string& rounding,
                         bool hadamard, bool power_of_two, std::uint64_t seed,
                         std::uint64_t counter) {
  if (x.ndim() != 2) {
    throw py::value_error("x: " + std::to_string(x.ndim()) + " dimensions, expected 2");
  }
  const std::int64_t rows = x.shape(0), cols = x.shape(1);
  const BlockRecipe r = parse_or_throw(kBlockRecipeNames, recipe, "recipe");
  const numerics::Rounding round = rounding_or_throw(rounding);
  const numerics::TileShape t{tile.first, tile.second};
  BlockQuantized q;
  {
    const float* data = x.data();
    if (r == BlockRecipe::mx) {
      numerics::MxSettings s;
      s.element = numerics::parse_format_or_throw(element, "element");
      s.rule = parse_or_throw(numerics::kMxScaleRuleNames, rule, "rule");
      s.tile = t;
      s.rounding = round;
      s.seed = seed;
      s.counter = counter;
      py::gil_scoped_release unlocked;
      q = numerics::quantize_mx(data, rows, cols, s);
    } else if (r == BlockRecipe::nvfp4) {
      numerics::Nvfp4Settings s;
      s.tile = t;
      s.hadamard = hadamard;
      s.rounding = round;
      s.seed = seed;
      s.counter = counter;
      py::gil_scoped_release unlocked;
      q = numerics::quantize_nvfp4(data, rows, cols, s);
    } else {
      numerics::Fp8BlockSettings s;
      s.element = numerics::parse_format_or_throw(element, "element");
      s.tile = t;
      s.power_of_two = power_of_two;
      s.rounding = round;
      s.seed = seed;
      s.counter = counter;
      py::gil_scoped_release unlocked;
      q = numerics::quantize_fp8_blocks(data, rows, cols, s);
    }
  }
  py::array_t<float> values({rows, cols});
  numerics::dequantize(q, values.mutable_data());
  py::dict out;
  out["elements"] = bytes_array(q.elements);
  py::array_t<float> scales({q.tile_grid_rows(), q.tile_grid_cols()});
  std::memcpy(scales.mutable_data(), q.scales.data(), q.scales.size() * sizeof(float));
  out["scales"] = scales;
  out["scale_codes"] = bytes_array(q.scale_codes());
  out["scale_format"] = std::string(numerics::name(q.scale_format));
  out["element"] = std::string(numerics::name(q.element));
  out["tensor_scale"] = q.tensor_scale;
  out["values"] = values;
  out["bits_per_element"] = q.bits_per_element();
  return out;
}

}  // namespace

void bind_blocks(py::module_& m) {
  m.def("quantize_blocks", &quantize_blocks, py::arg("x"), py::arg("recipe"), py::arg("element"),
        py::arg("rule"), py::arg("tile"), py::arg("rounding"), py::arg("hadamard"),
        py::arg("power_of_two"), py::arg("seed"), py::arg("counter"));
}

}  // namespace mantissa::python
