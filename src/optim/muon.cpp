// Muon (Jordan et al. 2024; PyTorch's torch.optim.Muon): momentum, then each matrix update
// orthogonalized by Newton-Schulz iterations (float32 products, where PyTorch rounds the
// iterate to bfloat16), scaled by sqrt(max(1, rows / cols)), with decoupled weight decay.
#include <algorithm>
#include <cmath>

#include "mantissa/kernels/gemm.hpp"
#include "optimizer_impl.hpp"

namespace mantissa::optim::detail {
namespace {

// The quintic's coefficients and the normalization floor of PyTorch's Muon.
constexpr float kA = 3.4445f, kB = -4.7750f, kC = 2.0315f;
constexpr double kEps = 1e-7;

// C[m x n] = op(A) op(B), dense float32.
void matmul(std::int64_t m, std::int64_t n, std::int64_t k, const float* a, bool trans_a,
            const float* b, bool trans_b, float* c) {
  kernels::gemm(kernels::GemmShape::dense(m, n, k, trans_a, trans_b), a, b, c, false);
}

// X (rows x cols, rows <= cols) replaced by its Newton-Schulz orthogonalization.
void newton_schulz(std::vector<float>& x, std::int64_t rows, std::int64_t cols, int steps) {
  double norm = 0;
  for (float v : x) norm += static_cast<double>(v) * v;
  const auto inv = static_cast<float>(1.0 / std::max(std::sqrt(norm), kEps));
  for (float& v : x) v *= inv;
  std::vector<float> gram(static_cast<std::size_t>(rows * rows)), gram2(gram.size()),
      next(x.size());
  for (int s = 0; s < steps; ++s) {
    matmul(rows, rows, cols, x.data(), false, x.data(), true, gram.data());          // A = X X^T
    matmul(rows, rows, rows, gram.data(), false, gram.data(), false, gram2.data());  // A A
    for (std::size_t i = 0; i < gram.size(); ++i) gram[i] = kB * gram[i] + kC * gram2[i];
    matmul(rows, cols, rows, gram.data(), false, x.data(), false, next.data());  // B X
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = kA * x[i] + next[i];
  }
}

// `u` (rows x cols) orthogonalized, through its transpose when it is taller than wide.
void orthogonalize(std::vector<float>& u, std::int64_t rows, std::int64_t cols, int steps) {
  if (rows <= cols) {
    newton_schulz(u, rows, cols, steps);
    return;
  }
  std::vector<float> t(u.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) t[c * rows + r] = u[r * cols + c];
  }
  newton_schulz(t, cols, rows, steps);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) u[r * cols + c] = t[c * rows + r];
  }
}

}  // namespace

std::vector<std::string> state_names(const Muon&, const Variable&) {
  return {"momentum_buffer"};
}

void update(const Muon& s, const UpdateArgs& a) {
  const auto mom = static_cast<float>(s.momentum);
  float *buf = a.state[0].f32(), *p = a.p;
  std::vector<float> u(static_cast<std::size_t>(a.n));
  for (std::int64_t i = 0; i < a.n; ++i) {
    buf[i] = mom * buf[i] + (1.0f - mom) * a.g[i];
    u[static_cast<std::size_t>(i)] = s.nesterov ? (1.0f - mom) * a.g[i] + mom * buf[i] : buf[i];
  }
  double lr = a.lr;
  if (a.param.shape().size() >= 2 && a.n > 0) {  // a matrix: [shape[0], the rest]
    const std::int64_t rows = a.param.shape()[0], cols = a.n / rows;
    orthogonalize(u, rows, cols, s.ns_steps);
    lr *= std::sqrt(std::max(1.0, static_cast<double>(rows) / static_cast<double>(cols)));
  }
  const auto decay = static_cast<float>(1.0 - a.lr * a.wd);
  const auto step = static_cast<float>(lr);
  for (std::int64_t i = 0; i < a.n; ++i)
    p[i] = p[i] * decay - step * u[static_cast<std::size_t>(i)];
}

}  // namespace mantissa::optim::detail
