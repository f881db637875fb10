// safetensors round trips in every dtype mantissa writes, checked byte for byte against the
// formats' known bit patterns (IEEE binary16, bfloat16, OCP FP8) and the file layout of the
// safetensors spec, and files written by hand read back.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "mantissa/error.hpp"
#include "mantissa/tensor/safetensors.hpp"

namespace mantissa::tensor {
namespace {

using json = nlohmann::json;

struct Case {
  Format format;
  const char* dtype;
  std::vector<float> values;        // 1, -2, the largest finite value, the smallest subnormal
  std::vector<std::uint16_t> bits;  // their patterns, from the formats' definitions
};

const std::vector<Case> kCases = {
    {Format::float16, "F16", {1.0f, -2.0f, 65504.0f, 0x1p-24f}, {0x3c00, 0xc000, 0x7bff, 0x0001}},
    {Format::bfloat16,
     "BF16",
     {1.0f, -2.0f, 3.38953139e38f, 0x1p-133f},
     {0x3f80, 0xc000, 0x7f7f, 0x0001}},
    {Format::float8_e4m3, "F8_E4M3", {1.0f, -2.0f, 448.0f, 0x1p-9f}, {0x38, 0xc0, 0x7e, 0x01}},
    {Format::float8_e5m2, "F8_E5M2", {1.0f, -2.0f, 57344.0f, 0x1p-16f}, {0x3c, 0xc0, 0x7b, 0x01}},
};

// The parts of a safetensors file: the JSON header and the data section.
struct Parsed {
  json header;
  std::string data;
};
Parsed split(const std::string& file) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(file[i]);
  EXPECT_EQ((8 + n) % 8, 0u) << "the data section starts 8-byte aligned";
  return {json::parse(file.substr(8, n)), file.substr(8 + n)};
}

std::string header_of(const std::string& json_text) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((json_text.size() >> (8 * i)) & 0xff);
  return out + json_text;
}

TEST(Safetensors, EachDtypeIsWrittenAsItsBitPatternsLittleEndian) {
  for (const Case& c : kCases) {
    const Tensor t = Tensor::from_vector(c.values, {2, 2}, c.format);
    ASSERT_EQ(t.to_vector(), c.values) << c.dtype << ": the values must be exact in the format";
    const Parsed p = split(encode_safetensors({{"w", t}}, {{"note", "x"}}));
    const json& e = p.header.at("w");
    EXPECT_EQ(e.at("dtype"), c.dtype);
    EXPECT_EQ(e.at("shape"), json::array({2, 2}));
    const std::size_t width = numerics::traits(c.format).storage_bytes;
    EXPECT_EQ(e.at("data_offsets"), json::array({0, 4 * width}));
    EXPECT_EQ(p.header.at("__metadata__").at("note"), "x");
    for (std::size_t i = 0; i < c.bits.size(); ++i) {
      std::uint16_t got = 0;
      for (std::size_t b = 0; b < width; ++b) {
        got |= static_cast<std::uint16_t>(static_cast<unsigned char>(p.data[i * width + b])
                                          << (8 * b));
      }
      EXPECT_EQ(got, c.bits[i]) << c.dtype << " element " << i;
    }
  }
}

TEST(Safetensors, EachDtypeRoundTripsThroughAFile) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("mantissa_st_" + std::to_string(::getpid()) + ".safetensors"))
                               .string();
  std::map<std::string, Tensor> tensors;
  for (const Case& c : kCases) tensors[c.dtype] = Tensor::from_vector(c.values, {4}, c.format);
  tensors["strided"] =
      Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, Format::bfloat16).transpose(0, 1);
  save_safetensors(path, tensors, {{"step", "7"}});
  const SafetensorsFile f = load_safetensors(path);
  std::filesystem::remove(path);
  EXPECT_EQ(f.metadata.at("step"), "7");
  for (const Case& c : kCases) {
    const Tensor& t = f.tensors.at(c.dtype);
    EXPECT_EQ(t.format(), c.format) << c.dtype;
    EXPECT_EQ(t.to_vector(), c.values) << c.dtype;
  }
  const Tensor& s = f.tensors.at("strided");  // written in the view's order
  EXPECT_EQ(s.shape(), (Shape{3, 2}));
  EXPECT_EQ(s.to_vector(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(Safetensors, CbFloat16HasNoDtypeAndTravelsAsF32) {
  const std::vector<float> v = {1.0f + 0x1p-9f, -0x1p-39f, 4290772992.0f};
  const Parsed p =
      split(encode_safetensors({{"c", Tensor::from_vector(v, {3}, Format::cbfloat16)}}));
  EXPECT_EQ(p.header.at("c").at("dtype"), "F32");
  const SafetensorsFile f = decode_safetensors(
      encode_safetensors({{"c", Tensor::from_vector(v, {3}, Format::cbfloat16)}}), "mem");
  EXPECT_EQ(f.tensors.at("c").format(), Format::float32);
  EXPECT_EQ(f.tensors.at("c").to_vector(), v);
}

TEST(Safetensors, AHandWrittenFileReads) {
  // BF16 [1, -2] and F8_E5M2 [0.5] as the spec lays them out, metadata included.
  const std::string h =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},)"
      R"("b":{"dtype":"F8_E5M2","shape":[1,1],"data_offsets":[4,5]}})";
  const std::string data = {'\x80', '\x3f', '\x00', '\xc0', '\x38'};
  const SafetensorsFile f = decode_safetensors(header_of(h) + data, "hand");
  EXPECT_EQ(f.tensors.at("a").to_vector(), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(f.tensors.at("b").shape(), (Shape{1, 1}));
  EXPECT_EQ(f.tensors.at("b").to_vector(), (std::vector<float>{0.5f}));
  EXPECT_EQ(f.metadata.at("k"), "v");
}

TEST(Safetensors, UnknownDtypesAreRefusedListingTheKnownOnes) {
  const std::string h = R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})";
  try {
    decode_safetensors(header_of(h) + std::string(8, '\0'), "f64.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("f64.safetensors: tensor 'a' has unsupported dtype 'F64' "
                                         "(expected one of: F32, F16, BF16, F8_E4M3, F8_E5M2)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace mantissa::tensor
