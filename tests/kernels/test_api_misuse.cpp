// The matrix-product API under mistaken use (the library audit of 2026-11-28,
// docs/reliability.md): layouts that cannot hold the matrices, formats no tensor is stored in
// and empty epilogues are refused with mantissa::Error naming the field; an exception thrown
// by an epilogue on any thread reaches the caller (it once ended the program in
// std::terminate); an empty sum on oneDNN's in-thread sgemm gives zeros.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "error_of.hpp"
#include "gemm/onednn_routes.hpp"
#include "mantissa/error.hpp"
#include "mantissa/kernels/gemm.hpp"
#include "mantissa/precision/policy.hpp"

namespace mantissa::kernels {
namespace {

using numerics::Format;
using precision::MatmulRoute;
using testing::error_of;

TEST(GemmMisuse, LeadingDimensionsShorterThanALineAreRefused) {
  const std::vector<float> a(64, 1.0f), b(64, 1.0f);
  std::vector<float> c(64, 0.0f);
  GemmShape s = GemmShape::dense(2, 2, 4);
  s.lda = 1;  // A's lines are 4 long: once read out of place or refused by oneDNN's descriptor
  std::string e = error_of([&] { gemm(s, a.data(), b.data(), c.data(), false); });
  EXPECT_NE(e.find("gemm: lda 1 (expected >= 4"), std::string::npos) << e;
  s = GemmShape::dense(2, 2, 4, true, true);
  s.ldb = 3;
  e = error_of([&] { gemm(s, a.data(), b.data(), c.data(), false); });
  EXPECT_NE(e.find("gemm: ldb 3 (expected >= 4"), std::string::npos) << e;
  s = GemmShape::dense(2, 3, 4);
  s.ldc = 1;
  e = error_of([&] { gemm(s, a.data(), b.data(), c.data(), false); });
  EXPECT_NE(e.find("gemm: ldc 1 (expected >= 3"), std::string::npos) << e;
  // An empty matrix holds no line: any leading dimension will do (A and B here, lda = ldb = 0
  // for an empty depth), and the product is the empty sum.
  s = GemmShape::dense(2, 2, 0);
  std::fill(c.begin(), c.end(), 7.0f);
  gemm(s, a.data(), b.data(), c.data(), false);
  EXPECT_EQ(std::vector<float>(c.begin(), c.begin() + 4), std::vector<float>(4, 0.0f));
}

TEST(GemmMisuse, OperandsInAFormatNoTensorHoldsAreRefused) {
  const std::vector<unsigned char> codes(16, 0x08);  // fp6 codes, one a byte
  const std::vector<float> b(16, 1.0f);
  std::vector<float> c(4, 0.0f);
  const std::string e = error_of([&] {
    gemm(GemmShape::dense(2, 2, 2), Operand(codes.data(), Format::float6_e2m3), b.data(), c.data(),
         false);
  });
  EXPECT_NE(e.find("operand A's format"), std::string::npos) << e;
  EXPECT_NE(e.find("float6_e2m3"), std::string::npos) << e;
}

TEST(GemmMisuse, AnEpiloguesExceptionReachesTheCallerFromEveryRoute) {
  // 256^3: large enough to run on all threads.
  const std::int64_t n = 256;
  const std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f);
  for (MatmulRoute route : {MatmulRoute::fp32, MatmulRoute::onednn_fp32}) {
    const GemmPrecision p{Format::float32, 1, GemmAlgorithm::automatic, route};
    const std::string e = error_of([&] {
      gemm(GemmShape::dense(n, n, n), a.data(), b.data(), GemmEpilogue([](const GemmTile& t) {
             if (t.row0 + t.rows > 128) throw Error("the receiver refuses this tile");
           }),
           p);
    });
    EXPECT_EQ(e, "the receiver refuses this tile") << precision::route_name(route);
  }
  const std::string e = error_of([&] {
    gemm(GemmShape::dense(2, 2, 2), a.data(), b.data(), GemmEpilogue(), GemmPrecision{});
  });
  EXPECT_NE(e.find("the epilogue is empty"), std::string::npos) << e;
}

TEST(GemmMisuse, AnEmptySumOnOnednnsInThreadSgemmIsZero) {
  std::vector<float> c(6, 7.0f);
  GemmShape s = GemmShape::dense(2, 3, 0);  // lda 0: oneDNN's sgemm refuses it
  gemm_detail::onednn_sgemm_in_thread(s, nullptr, nullptr, c.data(), true);
  EXPECT_EQ(c, std::vector<float>(6, 7.0f));  // C + an empty sum
  gemm_detail::onednn_sgemm_in_thread(s, nullptr, nullptr, c.data(), false);
  EXPECT_EQ(c, std::vector<float>(6, 0.0f));
}

}  // namespace
}  // namespace mantissa::kernels
