// Block-scaled GEMM operands (quant/block_operand.hpp): quantize_packed gives the numerics
// quantizers' bits (bands on all threads, stochastic counters continued), the bfloat16
// decode against its scalar twin and against values from the codec, the exactness flag on
// values below float32's normal range, the bytes an operand takes, and the chunk route
// against its scalar twin bit for bit on the fp32 route.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <utility>

#include "bf16_decode_twin.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/numerics/convert.hpp"
#include "mantissa/numerics/cpu_features.hpp"
#include "mantissa/numerics/minifloat_codec.hpp"
#include "mantissa/quant/block_operand.hpp"

namespace mantissa::testing {
namespace {

using numerics::Format;
using numerics::TileShape;
using quant::PackedBlocks;

std::vector<float> matrix(std::int64_t rows, std::int64_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float scale = std::ldexp(1.0f, static_cast<int>(rng() % 16) - 8);
    for (std::int64_t c = 0; c < cols; ++c) x[r * cols + c] = d(rng) * scale;
  }
  return x;
}

// The vector paths the block quantizers' bands take here (AVX2, and AVX-512 where the CPU
// has it: quant/block_bands.hpp), each set in turn; the best one restored at the end.
struct EveryPath {
  std::vector<numerics::SimdPath> paths;
  EveryPath() {
    for (numerics::SimdPath p : {numerics::SimdPath::avx2, numerics::SimdPath::avx512}) {
      if (numerics::cpu_supports(p)) paths.push_back(p);
    }
  }
  ~EveryPath() { numerics::set_simd_path(numerics::best_simd_path()); }
  bool has_avx512() const { return paths.size() == 2; }
};

void expect_same(const PackedBlocks& a, const numerics::BlockQuantized& b) {
  EXPECT_EQ(a.elements, b.elements);
  if (b.scale_format == Format::float32) {
    ASSERT_EQ(a.scales32.size(), b.scales.size());
    for (std::size_t i = 0; i < b.scales.size(); ++i) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(a.scales32[i]),
                std::bit_cast<std::uint32_t>(b.scales[i]));
    }
  } else {
    EXPECT_EQ(a.scale_codes, b.scale_codes());
  }
  EXPECT_EQ(std::bit_cast<std::uint32_t>(a.tensor_scale),
            std::bit_cast<std::uint32_t>(b.tensor_scale));
}

// The reference quantizers as ref(values, rows, cols) for expect_reference_bits.
auto mx_ref(const numerics::MxSettings& s) {
  return [s](const float* v, std::int64_t r, std::int64_t c) {
    return numerics::quantize_mx_ref(v, r, c, s);
  };
}
auto fp8_blocks_ref(const numerics::Fp8BlockSettings& s) {
  return [s](const float* v, std::int64_t r, std::int64_t c) {
    return numerics::quantize_fp8_blocks_ref(v, r, c, s);
  };
}
auto nvfp4_ref(const numerics::Nvfp4Settings& s) {
  return [s](const float* v, std::int64_t r, std::int64_t c) {
    return numerics::quantize_nvfp4_ref(v, r, c, s);
  };
}

// quantize_packed of x (rows x cols) stored as float32 and as bfloat16, each against
// ref(values, rows, cols), the reference quantizer of the float32 values it stands for.
template <class Ref>
void expect_reference_bits(const std::vector<float>& x, std::int64_t rows, std::int64_t cols,
                           const quant::BlockSpec& spec, const Ref& ref) {
  std::vector<std::uint16_t> xb(x.size());
  numerics::encode_array(x.data(), x.size(), Format::bfloat16, xb.data());
  std::vector<float> xbf(x.size());
  numerics::decode_array(xb.data(), xb.size(), Format::bfloat16, xbf.data());
  expect_same(quant::quantize_packed(x.data(), Format::float32, rows, cols, spec),
              ref(x.data(), rows, cols));
  expect_same(quant::quantize_packed(xb.data(), Format::bfloat16, rows, cols, spec),
              ref(xbf.data(), rows, cols));
}

TEST(BlockOperand, QuantizePackedGivesTheQuantizersBits) {
  // 600 x 256: several groups of bands per thread; 600 rows: a last column block of 24. The
  // same matrix stored as bfloat16 is decoded group by group: the bits of its float32 values.
  const std::int64_t rows = 600, cols = 256;
  const std::vector<float> x = matrix(rows, cols, 1);
  const auto check = [&](const auto& spec, const auto& twin) {
    expect_reference_bits(x, rows, cols, spec, twin(spec));
  };
  for (Format e : {Format::float8_e4m3, Format::float6_e3m2, Format::float4_e2m1}) {
    for (TileShape t : {TileShape{1, 32}, TileShape{32, 1}}) {
      numerics::MxSettings s;
      s.element = e;
      s.tile = t;
      s.rule = numerics::MxScaleRule::rceil;
      s.rounding = numerics::Rounding::stochastic;
      s.seed = 5;
      s.counter = 1000;
      check(s, mx_ref);
    }
  }
  numerics::Fp8BlockSettings b;
  b.tile = {128, 128};
  b.power_of_two = false;
  check(b, fp8_blocks_ref);
  // NVFP4's tensor scale spans the matrix (its amax is in one of the rows, scaled by up to
  // 2^7): the bands quantized apart must share it. Weights' 16 x 16 tiles; activations' 1 x 16
  // with the rotation, and gradients' with stochastic rounding both ways.
  for (int which = 0; which < 4; ++which) {
    numerics::Nvfp4Settings n;
    n.tile = which == 0 ? TileShape{16, 16} : which == 3 ? TileShape{16, 1} : TileShape{1, 16};
    n.hadamard = which == 1 || which == 2;
    if (which >= 2) {
      n.rounding = numerics::Rounding::stochastic;
      n.seed = 9;
      n.counter = 77;
    }
    SCOPED_TRACE(which);
    check(n, nvfp4_ref);
  }
}

TEST(BlockOperand, WideRowsOfMxTilesGiveTheQuantizersBits) {
  // Rows of 1,191 columns: 1 x 32 tiles sixteen at a time (the bfloat16 amaxes), then one
  // by one, then a partial tile of 7; every scale rule, codes and values.
  const std::int64_t rows = 40, cols = 1191;
  std::vector<float> x = matrix(rows, cols, 21);
  x[3 * cols + 100] = std::numeric_limits<float>::quiet_NaN();
  x[5 * cols + 700] = -std::numeric_limits<float>::infinity();
  for (std::int64_t c = 64; c < 96; ++c) x[7 * cols + c] = 0.0f;
  x[9 * cols + 33] = std::ldexp(1.0f, -130);
  for (auto rule : {numerics::MxScaleRule::floor, numerics::MxScaleRule::ceil,
                    numerics::MxScaleRule::even, numerics::MxScaleRule::rceil}) {
    for (Format e : {Format::float8_e4m3, Format::float4_e2m1}) {
      numerics::MxSettings s;
      s.element = e;
      s.rule = rule;
      expect_reference_bits(x, rows, cols, s, mx_ref(s));
    }
  }
}

TEST(BlockOperand, NearestEvenCodesGiveTheQuantizersBitsOnEveryPath) {
  // Nearest-even MX, fp8 blocks and NVFP4, fp4 two codes a byte (the AVX-512 bands where the CPU
  // has them) against the scalar reference quantizers: partial tiles both ways, a NaN tile,
  // an infinity, a negative zero, a float32 subnormal, an all-zero tile; float32 and
  // bfloat16 input.
  const std::int64_t rows = 70, cols = 100;
  std::vector<float> x = matrix(rows, cols, 12);
  x[7] = std::numeric_limits<float>::quiet_NaN();
  x[2 * cols + 50] = std::numeric_limits<float>::infinity();
  x[4 * cols + 3] = -0.0f;
  x[6 * cols + 70] = std::ldexp(1.0f, -140);
  for (std::int64_t c = 32; c < 64; ++c) x[9 * cols + c] = 0.0f;
  x[40 * cols + 99] = -std::ldexp(1.0f, 20);  // a large element beside small ones: subnormal codes
  const EveryPath every;
  std::size_t compared = 0;
  for (const numerics::SimdPath path : every.paths) {
    numerics::set_simd_path(path);
    SCOPED_TRACE(std::string(numerics::simd_path_name(path)));
    for (Format e : numerics::kBlockElementFormats) {  // fp4: 100 columns, two codes a byte
      for (auto rule : {numerics::MxScaleRule::floor, numerics::MxScaleRule::rceil}) {
        for (TileShape t : {TileShape{1, 32}, TileShape{32, 1}}) {
          numerics::MxSettings s;
          s.element = e;
          s.rule = rule;
          s.tile = t;
          expect_reference_bits(x, rows, cols, s, mx_ref(s));
          compared += 2;
        }
      }
    }
    for (Format e : {Format::float8_e4m3, Format::float8_e5m2}) {
      for (bool pow2 : {true, false}) {
        for (TileShape t : {TileShape{1, 16}, TileShape{16, 1}, TileShape{128, 128}}) {
          numerics::Fp8BlockSettings b;
          b.element = e;
          b.power_of_two = pow2;
          b.tile = t;
          expect_reference_bits(x, rows, cols, b, fp8_blocks_ref(b));
          compared += 2;
        }
      }
    }
    // NVFP4 (e4m3 tile scales under a tensor scale; a product of exactly zero encodes as +0):
    // the matrix as it is (its NaN makes the tensor scale NaN: every tile a NaN tile), and
    // finite, scaled so that the tensor scale and the tiles reach the ends of float32's and
    // e4m3's ranges.
    std::vector<float> finite = x;
    finite[7] = 3.0f;
    finite[2 * cols + 50] = -5.0f;
    for (const int binade : {1000, 0, -100, -125, 100}) {
      std::vector<float> scaled(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        scaled[i] = binade == 1000 ? x[i] : std::ldexp(finite[i], binade);
      }
      for (TileShape t : {TileShape{1, 16}, TileShape{16, 1}, TileShape{16, 16}}) {
        numerics::Nvfp4Settings n;
        n.tile = t;
        SCOPED_TRACE("nvfp4 binade " + std::to_string(binade));
        expect_reference_bits(scaled, rows, cols, n, nvfp4_ref(n));
        compared += 2;
      }
    }
  }
  EXPECT_EQ(compared, every.paths.size() * (5 * 2 * 2 * 2 + 2 * 2 * 3 * 2 + 5 * 3 * 2));
  if (!every.has_avx512()) std::printf("[  SKIPPED ] the AVX-512 bands: not on this CPU\n");
}

TEST(BlockOperand, Nvfp4TilesWithPowerOfTwoScalesTakeTheirMultiplier) {
  // A matrix of ones with one 448: the tensor's global encode scale is 2688 / 448 = 6, so the
  // tiles of ones get the e4m3 decode scale 1 * 6 / 6 = 1, a power of two, while their
  // elements are scaled by 1 / (1 * (1/6)) = 6 (code 0x7), not by the decode's reciprocal (1:
  // code 0x2). bfloat16 input with 16 x 1 tiles, where the bands would otherwise round in
  // x's own scale.
  const std::int64_t rows = 32, cols = 32;
  std::vector<float> x(static_cast<std::size_t>(rows * cols), 1.0f);
  x[0] = 448.0f;
  std::vector<std::uint16_t> xb(x.size());
  numerics::encode_array(x.data(), x.size(), Format::bfloat16, xb.data());
  const EveryPath every;
  for (const numerics::SimdPath path : every.paths) {
    numerics::set_simd_path(path);
    for (TileShape t : {TileShape{16, 1}, TileShape{1, 16}, TileShape{16, 16}}) {
      numerics::Nvfp4Settings n;
      n.tile = t;
      const numerics::BlockQuantized want = numerics::quantize_nvfp4_ref(x.data(), rows, cols, n);
      ASSERT_EQ(want.elements[511] >> 4, 0x7);  // the last element (a high nibble): 6.0
      expect_same(quant::quantize_packed(x.data(), Format::float32, rows, cols, n), want);
      expect_same(quant::quantize_packed(xb.data(), Format::bfloat16, rows, cols, n), want);
    }
  }
}

TEST(BlockOperand, SettingsTheRecipesLackAreRefusedOnEveryPath) {
  // Refused with the numerics quantizers' messages before any band runs (an exception
  // thrown inside a parallel region would end the process instead).
  const std::vector<float> x(64, 1.0f);
  const EveryPath every;
  for (const numerics::SimdPath path : every.paths) {
    numerics::set_simd_path(path);
    SCOPED_TRACE(std::string(numerics::simd_path_name(path)));
    numerics::MxSettings mx;
    mx.element = Format::bfloat16;
    EXPECT_FALSE(quant::quantize_to_bf16_takes(mx));
    std::vector<std::uint16_t> out(x.size());
    try {
      quant::quantize_packed(x.data(), Format::float32, 2, 32, mx);
      ADD_FAILURE() << "an MX element format that is not one was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("bfloat16"), std::string::npos) << e.what();
    }
    EXPECT_THROW(quant::quantize_to_bf16(x.data(), Format::float32, 2, 32, mx, out.data()), Error);
    numerics::Fp8BlockSettings fp8;
    fp8.epsilon = -1.0f;
    EXPECT_FALSE(quant::quantize_to_bf16_takes(fp8));
    EXPECT_THROW(quant::quantize_packed(x.data(), Format::float32, 2, 32, fp8), Error);
    fp8.epsilon = 0.0f;
    fp8.tile = {1, 0};
    EXPECT_THROW(quant::quantize_packed(x.data(), Format::float32, 2, 32, fp8), Error);
    numerics::MxSettings ok;
    EXPECT_THROW(quant::quantize_to_bf16(x.data(), Format::float16, 2, 32, ok, out.data()), Error);
    EXPECT_THROW(quant::quantize_to_bf16(x.data(), Format::float32, -2, 32, ok, out.data()), Error);
    // Sizes whose product overflows: refused before anything is allocated or read.
    const std::int64_t huge = std::int64_t{1} << 40;
    EXPECT_THROW(quant::quantize_to_bf16(x.data(), Format::float32, huge, huge, ok, out.data()),
                 Error);
    try {
      quant::quantize_packed(x.data(), Format::float32, huge, huge, ok);
      ADD_FAILURE() << "an overflowing size was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("1099511627776 x 1099511627776"), std::string::npos)
          << e.what();
    }
    EXPECT_THROW(quant::quantize_packed(x.data(), Format::float32, -1, 32, ok), Error);
    // NVFP4's rotation on rows of 24 (not a multiple of 16), in a matrix large enough for
    // the bands to run on all threads: refused with the numerics message, not inside them.
    const std::vector<float> wide(2048 * 24, 1.0f);
    numerics::Nvfp4Settings rotated;
    rotated.hadamard = true;
    try {
      quant::quantize_packed(wide.data(), Format::float32, 2048, 24, rotated);
      ADD_FAILURE() << "a rotation of rows of 24 was taken";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("24 columns"), std::string::npos) << e.what();
    }
  }
}

TEST(BlockOperand, Bf16DecodeMatchesItsTwinAndTheCodec) {
  // 37 x 45: fp4 rows start inside a byte (the AVX-512 decode leaves those to the AVX2 one);
  // 38 x 64: every format on the AVX-512 decode where the CPU has it.
  const EveryPath every;
  for (const numerics::SimdPath path : every.paths) {
    numerics::set_simd_path(path);
    for (const auto& [rows, cols] : {std::pair<std::int64_t, std::int64_t>{37, 45}, {38, 64}}) {
      SCOPED_TRACE(std::string(numerics::simd_path_name(path)) + " " + std::to_string(rows) +
                   " x " + std::to_string(cols));
      const std::vector<float> x = matrix(rows, cols, 2);
      std::vector<quant::BlockSpec> specs;
      for (Format e : numerics::kBlockElementFormats) {
        numerics::MxSettings s;
        s.element = e;
        s.tile = {1, 32};
        specs.push_back(s);
        s.tile = {32, 1};
        specs.push_back(s);
      }
      numerics::Nvfp4Settings n;
      specs.push_back(n);
      n.tile = {16, 16};
      specs.push_back(n);
      numerics::Fp8BlockSettings b;
      b.tile = {1, 16};
      specs.push_back(b);
      b.power_of_two = false;
      b.tile = {16, 1};
      specs.push_back(b);
      for (const quant::BlockSpec& spec : specs) {
        const PackedBlocks q = quant::quantize_packed(x.data(), Format::float32, rows, cols, spec);
        std::vector<std::uint16_t> fast(x.size()), twin(x.size());
        const bool exact = quant::dequantize_to_bf16(q, fast.data());
        ASSERT_EQ(exact, quant::dequantize_to_bf16_ref(q, twin.data()));
        if (!exact) continue;  // fp8 blocks' float32 scales: not always bfloat16 values
        ASSERT_EQ(fast, twin);
        std::vector<float> f32(x.size());
        quant::dequantize_to_float32(q, f32.data());
        const numerics::Layout& l = numerics::layout(q.element);
        for (std::int64_t r = 0; r < rows; ++r) {
          for (std::int64_t c = 0; c < cols; ++c) {
            const std::int64_t i = r * cols + c;
            const std::uint32_t code =
                q.element == Format::float4_e2m1
                    ? (q.elements[static_cast<std::size_t>(i / 2)] >> (4 * (i % 2))) & 0xfu
                    : q.elements[static_cast<std::size_t>(i)];
            const double want = static_cast<double>(numerics::decode(code, l)) * q.scale_at(r, c);
            ASSERT_EQ(f32[static_cast<std::size_t>(i)], want);  // exact in float32
            ASSERT_EQ(std::bit_cast<float>(
                          static_cast<std::uint32_t>(fast[static_cast<std::size_t>(i)]) << 16),
                      want);  // and in bfloat16
          }
        }
      }
    }
  }
  if (!every.has_avx512()) std::printf("[  SKIPPED ] the AVX-512 decode: not on this CPU\n");
}

TEST(BlockOperand, EveryCodeDecodesAsItsTwinOnEveryPath) {
  // Every code of every element format (NaN and infinity codes included, which no quantizer
  // writes), in 1 x 16 tiles of scales 2^-3, 1 and NaN.
  const EveryPath every;
  for (const numerics::SimdPath path : every.paths) {
    numerics::set_simd_path(path);
    for (Format e : numerics::kBlockElementFormats) {
      SCOPED_TRACE(std::string(numerics::simd_path_name(path)) + " " +
                   std::string(numerics::name(e)));
      const int codes = 1 << numerics::layout(e).total_bits();
      PackedBlocks q;
      q.rows = 3;
      q.cols = codes;
      q.tile = {1, 16};
      q.element = e;
      q.scale_format = Format::float8_e8m0;
      const bool fp4 = e == Format::float4_e2m1;
      q.elements.assign(static_cast<std::size_t>(fp4 ? 3 * codes / 2 : 3 * codes), 0);
      for (std::int64_t r = 0; r < 3; ++r) {
        for (int c = 0; c < codes; ++c) {
          const std::int64_t i = r * codes + c;
          if (fp4) {
            q.elements[static_cast<std::size_t>(i / 2)] |=
                static_cast<std::uint8_t>(c << (4 * (i % 2)));
          } else {
            q.elements[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(c);
          }
        }
      }
      const std::uint8_t fields[] = {127 - 3, 127, 0xff};
      for (std::int64_t t = 0; t < 3 * q.tile_grid_cols(); ++t) {
        q.scale_codes.push_back(fields[t / q.tile_grid_cols()]);
      }
      expect_decode_as_twin(q);
    }
  }
  if (!every.has_avx512()) std::printf("[  SKIPPED ] the AVX-512 decode: not on this CPU\n");
}

TEST(BlockOperand, ValuesStraightFromTheMatrixMatchPackingThenDecoding) {
  const std::int64_t rows = 70, cols = 100;  // partial tiles both ways
  std::vector<float> x = matrix(rows, cols, 8);
  x[5] = std::numeric_limits<float>::quiet_NaN();  // a NaN tile (MX: codes 0, scale NaN)
  x[3 * cols + 40] = -std::numeric_limits<float>::infinity();
  x[6 * cols + 70] = std::ldexp(1.0f, -140);                     // a float32 subnormal input
  for (std::int64_t c = 0; c < 32; ++c) x[9 * cols + c] = 0.0f;  // an all-zero tile
  // The same matrix as bfloat16 (the H operands come in): its values as float32 too.
  std::vector<std::uint16_t> xb(x.size());
  numerics::encode_array(x.data(), x.size(), Format::bfloat16, xb.data());
  std::vector<float> xbf(x.size());
  numerics::decode_array(xb.data(), xb.size(), Format::bfloat16, xbf.data());
  std::vector<quant::BlockSpec> specs;
  for (Format e : numerics::kBlockElementFormats) {
    for (auto rule : {numerics::MxScaleRule::floor, numerics::MxScaleRule::rceil,
                      numerics::MxScaleRule::ceil, numerics::MxScaleRule::even}) {
      for (TileShape t : {TileShape{1, 32}, TileShape{32, 1}}) {
        numerics::MxSettings s;
        s.element = e;
        s.rule = rule;
        s.tile = t;
        specs.push_back(s);
      }
    }
  }
  // Tiles of 24 columns: not the bands' (one column or a multiple of 16), quantized and
  // decoded as the twin does it.
  for (Format e : {Format::float8_e4m3, Format::float8_e5m2}) {
    for (TileShape t : {TileShape{1, 16}, TileShape{16, 1}, TileShape{rows, cols}, TileShape{1, 24},
                        TileShape{24, 24}}) {
      numerics::Fp8BlockSettings s;
      s.element = e;
      s.tile = t;
      specs.push_back(s);
    }
  }
  std::size_t compared = 0;
  const EveryPath every;
  for (const numerics::SimdPath path : every.paths) {
    numerics::set_simd_path(path);
    SCOPED_TRACE(std::string(numerics::simd_path_name(path)));
    for (const quant::BlockSpec& spec : specs) {
      ASSERT_TRUE(quant::quantize_to_bf16_takes(spec));
      for (bool bf16_input : {false, true}) {
        const std::vector<float>& src = bf16_input ? xbf : x;
        std::vector<std::uint16_t> got(x.size()), want(x.size());
        const bool exact = quant::quantize_to_bf16(
            bf16_input ? static_cast<const void*>(xb.data()) : static_cast<const void*>(x.data()),
            bf16_input ? Format::bfloat16 : Format::float32, rows, cols, spec, got.data());
        const bool want_exact = quant::dequantize_to_bf16_ref(
            quant::quantize_packed(src.data(), Format::float32, rows, cols, spec), want.data());
        ASSERT_EQ(exact, want_exact);
        if (exact) {
          ASSERT_EQ(got, want);
          ++compared;
        }
      }
    }
  }
  // every spec's values are bfloat16 values here
  EXPECT_EQ(compared, 2 * specs.size() * every.paths.size());
  if (!every.has_avx512()) std::printf("[  SKIPPED ] the AVX-512 bands: not on this CPU\n");
  numerics::Nvfp4Settings nv;
  EXPECT_FALSE(quant::quantize_to_bf16_takes(nv));
  numerics::Fp8BlockSettings f32_scales;
  f32_scales.power_of_two = false;
  EXPECT_FALSE(quant::quantize_to_bf16_takes(f32_scales));
}

TEST(BlockOperand, ValuesAtEveryTileScaleMatchPackingThenDecoding) {
  // One 1 x 32 tile (and one 32 x 1) per binade of amax from 2^-149 to 2^127: the tile
  // scales cross the range where the AVX-512 bands round x in its own scale (2^-100..2^100)
  // and where they scale first; each answer and, where exact, each value as packing then
  // decoding gives them.
  const std::int64_t tiles = 277, cols = 32;
  std::vector<float> x(static_cast<std::size_t>(tiles * cols));
  for (std::int64_t t = 0; t < tiles; ++t) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const float v =
          std::ldexp(1.0f + static_cast<float>(c * 7 % 32) / 32.0f, static_cast<int>(t) - 149);
      x[static_cast<std::size_t>(t * cols + c)] = (c % 3 == 0 ? -v : v) / (c % 5 == 0 ? 4096 : 1);
    }
  }
  const EveryPath every;
  std::size_t exact_tiles = 0;
  for (const numerics::SimdPath path : every.paths) {
    numerics::set_simd_path(path);
    SCOPED_TRACE(std::string(numerics::simd_path_name(path)));
    for (Format e :
         {Format::float8_e4m3, Format::float8_e5m2, Format::float6_e2m3, Format::float4_e2m1}) {
      for (bool columns : {false, true}) {
        numerics::MxSettings s;
        s.element = e;
        s.tile = columns ? TileShape{32, 1} : TileShape{1, 32};
        // Column tiles: the transpose, so that each tile is again one binade.
        std::vector<float> in = x;
        if (columns) {
          for (std::int64_t t = 0; t < tiles; ++t) {
            for (std::int64_t c = 0; c < cols; ++c) in[c * tiles + t] = x[t * cols + c];
          }
        }
        const std::int64_t rows = columns ? cols : tiles, width = columns ? tiles : cols;
        for (std::int64_t t = 0; t < tiles; ++t) {  // tile by tile: one answer each
          std::vector<float> one(static_cast<std::size_t>(cols));
          for (std::int64_t c = 0; c < cols; ++c) {
            one[static_cast<std::size_t>(c)] = columns ? in[c * width + t] : in[t * cols + c];
          }
          const std::int64_t r1 = columns ? cols : 1, c1 = columns ? 1 : cols;
          // As float32, and as bfloat16 (the 32-lane path), against the scalar twins.
          std::vector<std::uint16_t> one_bf16(one.size());
          numerics::encode_array(one.data(), one.size(), Format::bfloat16, one_bf16.data());
          std::vector<float> one_bf16_values(one.size());
          numerics::decode_array(one_bf16.data(), one.size(), Format::bfloat16,
                                 one_bf16_values.data());
          for (const bool bf16 : {false, true}) {
            const void* input = bf16 ? static_cast<const void*>(one_bf16.data()) : one.data();
            const Format f = bf16 ? Format::bfloat16 : Format::float32;
            const std::vector<float>& values = bf16 ? one_bf16_values : one;
            std::vector<std::uint16_t> got(one.size()), want(one.size());
            const bool exact = quant::quantize_to_bf16(input, f, r1, c1, s, got.data());
            const bool want_exact = quant::dequantize_to_bf16_ref(
                quant::quantize_packed(values.data(), Format::float32, r1, c1, s), want.data());
            ASSERT_EQ(exact, want_exact) << numerics::name(e) << " tile " << t << " bf16 " << bf16;
            if (exact) {
              ASSERT_EQ(got, want) << numerics::name(e) << " tile " << t << " bf16 " << bf16;
              ++exact_tiles;
            }
            // The kept copy's codes from the same input: the reference quantizer's.
            expect_same(quant::quantize_packed(input, f, r1, c1, s),
                        numerics::quantize_mx_ref(values.data(), r1, c1, s));
          }
        }
        // The whole matrix at once: the AND of the tiles' answers, the same values.
        std::vector<std::uint16_t> got(in.size()), want(in.size());
        const bool exact =
            quant::quantize_to_bf16(in.data(), Format::float32, rows, width, s, got.data());
        EXPECT_FALSE(exact);  // the smallest binades are below float32's normal range
        EXPECT_FALSE(quant::dequantize_to_bf16_ref(
            quant::quantize_packed(in.data(), Format::float32, rows, width, s), want.data()));
      }
    }
  }
  EXPECT_GT(exact_tiles, every.paths.size() * 8 * 2 * 200);  // most binades are exact
  if (!every.has_avx512()) std::printf("[  SKIPPED ] the AVX-512 bands: not on this CPU\n");
}

TEST(BlockOperand, ValuesBelowTheNormalRangeAreNotBf16Exact) {
  // An MX block of tiny values: scale 2^-127 with elements down to 2^-9: values of 2^-136.
  std::vector<float> x(32, std::ldexp(1.0f, -135));
  x[0] = std::ldexp(1.0f, -127);
  numerics::MxSettings s;
  const PackedBlocks q = quant::quantize_packed(x.data(), Format::float32, 1, 32, s);
  std::vector<std::uint16_t> fast(32), twin(32);
  EXPECT_FALSE(quant::dequantize_to_bf16(q, fast.data()));
  EXPECT_FALSE(quant::dequantize_to_bf16_ref(q, twin.data()));
  // A product with large values then takes the float32 route and stays exact (bf16 units
  // would read the tiny values as zero and give 0).
  const std::vector<float> big(32, std::ldexp(1.0f, 100));
  const PackedBlocks qb = quant::quantize_packed(big.data(), Format::float32, 1, 32, s);
  float c = 0;
  quant::block_scaled_gemm(
      kernels::GemmShape::dense(1, 1, 32, false, true), q, qb,
      [&](const kernels::GemmTile& t) { c = t.values[0]; }, precision::MatmulRoute::automatic);
  double want = 0;
  for (float e : x) want += static_cast<double>(e) * std::ldexp(1.0, 100);
  EXPECT_EQ(c, static_cast<float>(want));
  EXPECT_GT(c, 0.0f);
}

TEST(BlockOperand, Mxfp4TakesFourAndAQuarterBitsPerElement) {
  const std::vector<float> x = matrix(64, 128, 3);
  numerics::MxSettings s;
  s.element = Format::float4_e2m1;
  EXPECT_EQ(quant::quantize_packed(x.data(), Format::float32, 64, 128, s).bytes() * 8,
            64 * 128 * 17 / 4);
  numerics::Nvfp4Settings n;
  EXPECT_EQ(quant::quantize_packed(x.data(), Format::float32, 64, 128, n).bytes() * 8,
            64 * 128 * 9 / 2);
}

// An epilogue copying the product's blocks into c, a row-major matrix n wide.
kernels::GemmEpilogue into(std::vector<float>& c, std::int64_t n) {
  return [&c, n](const kernels::GemmTile& t) {
    for (std::int64_t r = 0; r < t.rows; ++r) {
      for (std::int64_t j = 0; j < t.cols; ++j) {
        c[static_cast<std::size_t>((t.row0 + r) * n + t.col0 + j)] = t.values[r * t.ld + j];
      }
    }
  };
}

TEST(BlockOperand, ChunkRouteMatchesItsTwinOnTheFp32Route) {
  const std::int64_t m = 24, n = 40, k = 96;
  const std::vector<float> a = matrix(m, k, 4), b = matrix(k, n, 5), bt = matrix(n, k, 6);
  numerics::Fp8BlockSettings s;
  s.power_of_two = false;
  s.tile = {1, 32};
  const PackedBlocks qa = quant::quantize_packed(a.data(), Format::float32, m, k, s);
  s.tile = {32, 32};
  const PackedBlocks qb = quant::quantize_packed(b.data(), Format::float32, k, n, s);
  const PackedBlocks qbt = quant::quantize_packed(bt.data(), Format::float32, n, k, s);
  for (bool trans_b : {false, true}) {
    const PackedBlocks& q = trans_b ? qbt : qb;
    const kernels::GemmShape shape = kernels::GemmShape::dense(m, n, k, false, trans_b);
    std::vector<float> got(static_cast<std::size_t>(m * n)), want(got.size());
    quant::block_scaled_gemm(shape, qa, q, into(got, n), precision::MatmulRoute::fp32);
    quant::block_scaled_gemm_chunks_ref(shape, qa, q, want.data());
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i])) << i;
    }
  }
}

// Per-tensor fp8 operands (current scaling: one float32 scale each) multiply in one chunk;
// given their elements as bfloat16 (element_values, converted once by a caller multiplying
// them twice), every route gives the bits it gives from the codes, and
// copies_elements_to_bf16 says where the route would have copied the codes (onednn_bf16).
TEST(BlockOperand, ElementsGivenAsBfloat16GiveTheBitsOfTheCodes) {
  const std::int64_t m = 24, n = 40, k = 96;
  const std::vector<float> a = matrix(m, k, 8), bt = matrix(n, k, 9);
  numerics::Fp8BlockSettings s;
  s.power_of_two = false;
  s.tile = {m, k};
  const PackedBlocks qa = quant::quantize_packed(a.data(), Format::float32, m, k, s);
  s.tile = {n, k};
  s.element = Format::float8_e5m2;
  const PackedBlocks qb = quant::quantize_packed(bt.data(), Format::float32, n, k, s);
  const auto as_bf16 = [](const PackedBlocks& q) {
    std::vector<std::uint16_t> bits(q.elements.size());
    const numerics::Layout& l = numerics::layout(q.element);
    for (std::size_t i = 0; i < bits.size(); ++i) {  // the codec, code by code
      bits[i] = static_cast<std::uint16_t>(
          std::bit_cast<std::uint32_t>(numerics::decode(q.elements[i], l)) >> 16);
    }
    return bits;
  };
  const std::vector<std::uint16_t> ea = as_bf16(qa), eb = as_bf16(qb);
  const kernels::GemmShape shape = kernels::GemmShape::dense(m, n, k, false, true);
  const auto product = [&](quant::BlockOperand x, quant::BlockOperand y,
                           precision::MatmulRoute route) {
    std::vector<float> c(static_cast<std::size_t>(m * n));
    quant::block_scaled_gemm(shape, x, y, into(c, n), route);
    return c;
  };
  for (precision::MatmulRoute route : kernels::routes_for(Format::float8_e4m3)) {
    const std::string label(precision::route_name(route));
    EXPECT_EQ(quant::copies_elements_to_bf16(shape, qa, qb, route),
              route == precision::MatmulRoute::onednn_bf16)
        << label;
    const std::vector<float> want = product(qa, qb, route);
    quant::BlockOperand xa(qa), xb(qb);
    xa.element_values = ea.data();
    const std::vector<float> one = product(xa, qb, route);
    xb.element_values = eb.data();
    const std::vector<float> both = product(xa, xb, route);
    for (std::size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(one[i]), std::bit_cast<std::uint32_t>(want[i]))
          << label << " element " << i;
      ASSERT_EQ(std::bit_cast<std::uint32_t>(both[i]), std::bit_cast<std::uint32_t>(want[i]))
          << label << " element " << i;
    }
  }
  // Not one chunk (1 x 32 tiles along k) or not fp8 codes (MX's values route): no copy to
  // convert once.
  numerics::Fp8BlockSettings chunks;
  chunks.power_of_two = false;
  chunks.tile = {1, 32};
  const PackedBlocks qc = quant::quantize_packed(a.data(), Format::float32, m, k, chunks);
  EXPECT_FALSE(quant::copies_elements_to_bf16(shape, qc, qb, precision::MatmulRoute::onednn_bf16));
  const PackedBlocks mx =
      quant::quantize_packed(a.data(), Format::float32, m, k, numerics::MxSettings{});
  const PackedBlocks mxb =
      quant::quantize_packed(bt.data(), Format::float32, n, k, numerics::MxSettings{});
  EXPECT_FALSE(quant::copies_elements_to_bf16(shape, mx, mxb, precision::MatmulRoute::onednn_bf16));
}

TEST(BlockOperand, MismatchedOperandsAreRefused) {
  const std::vector<float> a = matrix(8, 32, 7);
  numerics::MxSettings s;
  const PackedBlocks q = quant::quantize_packed(a.data(), Format::float32, 8, 32, s);
  EXPECT_THROW(quant::block_scaled_gemm(
                   kernels::GemmShape::dense(8, 8, 16, false, true), q, q,
                   [](const kernels::GemmTile&) {}, precision::MatmulRoute::automatic),
               Error);
}

}  // namespace
}  // namespace mantissa::testing
