// safetensors round trips in every dtype mantissa writes, checked byte for byte against the
// formats' known bit patterns (IEEE binary16, bfloat16, OCP FP8) and the file layout of the
// safetensors spec, and files written by hand read back.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "error_of.hpp"
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

TEST(Safetensors, AnEmptyFileIsSaidEmptyAndAShortOneTruncated) {
  // 0 bytes (an empty file, or one under /proc whose size reads as 0) is not "truncated".
  const auto error_of = [](const std::string& bytes) {
    return mantissa::testing::error_of([&] { decode_safetensors(bytes, "x.safetensors"); });
  };
  EXPECT_EQ(error_of(""),
            "x.safetensors: is empty (0 bytes: no safetensors header length; a file whose size "
            "the system reports as 0, such as those under /proc, is no checkpoint)");
  EXPECT_EQ(error_of("abc"), "x.safetensors: truncated (3 bytes, no header length)");
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

// Hand-written hostile headers: each is refused naming the file, the tensor and what was
// expected, before anything of the claimed size is allocated.
TEST(Safetensors, HostileHeadersAreRefusedNamingTheTensor) {
  const auto entry = [](const std::string& shape, const std::string& offsets) {
    return R"({"t":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":)" + offsets + "}}";
  };
  const std::string eight(8, '\0');
  const struct {
    std::string header, data, message;
  } cases[] = {
      // [2^62 + 32] x 4 bytes wraps to 128 in 64 bits: unchecked, 128 bytes "matched".
      {entry("[4611686018427387936]", "[0,128]"), std::string(128, '\0'),
       "f: tensor 't': shape [4611686018427387936] of F32 has a byte size past int64"},
      {entry("[32.5]", "[0,128]"), std::string(128, '\0'),
       "f: tensor 't': shape [32.5] holds 32.5, not an integer >= 0"},
      {entry("[-2]", "[0,8]"), eight, "f: tensor 't': shape [-2] holds -2, not an integer >= 0"},
      {entry("[1,1,1,1,1,1,1]", "[0,4]"), std::string(4, '\0'),
       "f: tensor 't': shape [1,1,1,1,1,1,1] is not a list of at most 6 integers"},
      {entry("[32]", "[0,64]"), std::string(64, '\0'),
       "f: tensor 't': shape [32] of F32 needs 128 bytes (32 x 4), but data_offsets [0, 64] "
       "span 64"},
      {entry("[2]", "[8,0]"), eight,
       "f: tensor 't': shape [2] of F32 needs 8 bytes (2 x 4), but data_offsets [8, 0] end "
       "before they begin"},
      {entry("[2]", "[0,\"8\"]"), eight,
       "f: tensor 't': data_offsets [0,\"8\"] is not a list of two integers >= 0 [begin, end]"},
      {entry("[2]", "[8,16]"), std::string(16, '\0'),
       "f: bytes 0 to 8 of the data belong to no tensor (a hole before 't')"},
      {entry("[2]", "[0,8]"), std::string(12, '\0'),
       "f: 4 bytes after the last tensor belong to no tensor"},
      {entry("[4]", "[0,16]"), eight, "f: tensor 't' ends at byte 16 past the data's 8 bytes"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
       eight, "f: tensor 'b' overlaps the tensor before it in the data"},
      {R"({"t":{"dtype":"F32","shape":[2]}})", eight, "f: tensor 't': missing 'data_offsets'"},
      {R"({"t":[1,2]})", "", "f: tensor 't': expected {dtype, shape, data_offsets}, got [1,2]"},
      {R"({"__metadata__":[1]})", "", "f: __metadata__ is not a JSON object"},
      {R"({"__metadata__":{"k":5}})", "", "f: metadata 'k' is not a string"},
  };
  for (const auto& c : cases) {
    try {
      decode_safetensors(header_of(c.header) + c.data, "f");
      ADD_FAILURE() << "accepted: " << c.header;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
          << e.what() << "\n expected: " << c.message;
    }
  }
  try {
    load_safetensors(std::filesystem::temp_directory_path().string());
    ADD_FAILURE() << "a directory was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(": is a directory, not the safetensors file"),
              std::string::npos);
  }
}

TEST(Safetensors, TheCrc32IsZlibsOverTheStoredBytes) {
  // The CRC-32 of the little-endian float32 bytes of [1, 2] (00 00 80 3f 00 00 00 40),
  // computed here bit by bit from its definition (reflected, polynomial 0xedb88320, initial
  // and final xor 0xffffffff: the crc32 of zlib, gzip and PNG).
  const unsigned char bytes[] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40};
  std::uint32_t crc = 0xffffffffu;
  for (unsigned char b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  crc ^= 0xffffffffu;
  EXPECT_EQ(stored_crc32(Tensor::from_vector({1.0f, 2.0f}, {2})), crc);
  // cbfloat16 is stored as float32 values, and checksummed as stored.
  EXPECT_EQ(stored_crc32(Tensor::from_vector({1.0f, 2.0f}, {2}, Format::cbfloat16)), crc);
}

}  // namespace
}  // namespace mantissa::tensor

namespace mantissa::tensor {
namespace {

// A key given twice in one object of the header (a tensor's entry or the metadata's field)
// is refused, named: the JSON parser would keep the last, silently.
TEST(Safetensors, AKeyGivenTwiceInOneObjectIsRefused) {
  const auto error_for = [](const std::string& h) {
    std::string file(8, '\0');
    file[0] = static_cast<char>(h.size());
    try {
      decode_safetensors(file + h + std::string(8, '\0'), "dup.safetensors");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error_for(R"({"__metadata__":{"global_step":"4","global_step":"7"},)"
                      R"("t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})"),
            "dup.safetensors: header: the key 'global_step' is given twice in one object (which "
            "value is meant?)");
  EXPECT_EQ(error_for(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                      R"("t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})"),
            "dup.safetensors: header: the key 't' is given twice in one object (which value is "
            "meant?)");
  // The same key in different objects is no repetition.
  EXPECT_EQ(error_for(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                      R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})"),
            "(no error)");
}

// Issue 27: a header nested 200,000 deep (under the size bound) once overflowed the stack
// while its error message was built; it is refused by depth, and no message quotes it.
TEST(Safetensors, DeeplyNestedHeadersAreRefusedByDepth) {
  const std::size_t depth = 200000;
  std::string h = "{\"a\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((h.size() >> (8 * i)) & 0xff);
  try {
    decode_safetensors(file + h, "deep.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "deep.safetensors: header: JSON nested more than 64 levels deep (refused: no file "
              "of mantissa's nests this deep)");
  }
  // A mistyped entry is described by kind and size, never serialized.
  const std::string bad = R"({"t":{"dtype":"F32","shape":[[[1]]],"data_offsets":[0,4]}})";
  std::string f2(8, '\0');
  f2[0] = static_cast<char>(bad.size());
  try {
    decode_safetensors(f2 + bad + std::string(4, '\0'), "x.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "x.safetensors: tensor 't': shape a list of 1 values holds a list of 1 values, not "
              "an integer >= 0");
  }
  const std::string wide =
      R"({"t":{"dtype":"F32","shape":[1,2,3,4,5,6,7,8,9],"data_offsets":[0,4]}})";
  std::string f3(8, '\0');
  f3[0] = static_cast<char>(wide.size());
  try {
    decode_safetensors(f3 + wide + std::string(4, '\0'), "x.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "x.safetensors: tensor 't': shape a list of 9 values is not a list of at most 6 "
              "integers");
  }
}

}  // namespace
}  // namespace mantissa::tensor
