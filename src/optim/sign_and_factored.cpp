// Lion (Chen et al. 2023) and Adafactor (Shazeer & Stern 2018, with the update clipping,
// parameter scaling and relative step size of the common implementations).
#include <algorithm>
#include <cmath>

#include "optimizer_impl.hpp"

namespace mantissa::optim::detail {
namespace {

double rms(const float* x, std::int64_t n) {
  double s = 0;
  for (std::int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return std::sqrt(s / static_cast<double>(std::max<std::int64_t>(n, 1)));
}

// Adafactor factors the second moment of tensors with 2 or more dimensions, seen as
// [numel / last, last].
bool factored(const Variable& p) {
  return p.shape().size() >= 2;
}
std::int64_t cols_of(const Variable& p) {
  return p.shape().back();
}
std::int64_t rows_of(const Variable& p) {
  return p.value().numel() / cols_of(p);
}

}  // namespace

std::vector<std::string> state_names(const Lion&, const Variable&) {
  return {"exp_avg"};
}

void update(const Lion& s, const UpdateArgs& a) {
  const auto b1 = static_cast<float>(s.beta1), b2 = static_cast<float>(s.beta2);
  const auto decay = static_cast<float>(1.0 - a.lr * a.wd), flr = static_cast<float>(a.lr);
  float *m = a.state[0].f32(), *p = a.p;
  for (std::int64_t i = 0; i < a.n; ++i) {
    const float c = b1 * m[i] + (1.0f - b1) * a.g[i];
    const float sign = c > 0 ? 1.0f : (c < 0 ? -1.0f : 0.0f);
    p[i] = p[i] * decay - flr * sign;
    m[i] = b2 * m[i] + (1.0f - b2) * a.g[i];
  }
}

// Adafactor's state: the factored second moment (rows, columns) or the full one, then the
// first moment.
std::vector<std::string> state_names(const Adafactor&, const Variable& p) {
  return factored(p) ? std::vector<std::string>{"exp_avg_sq_row", "exp_avg_sq_col", "exp_avg"}
                     : std::vector<std::string>{"exp_avg_sq", "exp_avg"};
}

Tensor init_state(const Adafactor&, std::size_t index, const Variable& param) {
  if (factored(param) && index == 0) return Tensor::zeros(tensor::Shape{rows_of(param)});
  if (factored(param) && index == 1) return Tensor::zeros(tensor::Shape{cols_of(param)});
  return Tensor::zeros(param.shape());
}

void update(const Adafactor& s, const UpdateArgs& a) {
  const float* g = a.g;
  float* p = a.p;
  const std::int64_t n = a.n;
  const double t = static_cast<double>(a.step);
  double step_lr = a.lr;
  if (s.relative_step) step_lr = std::min(s.warmup_init ? 1e-6 * t : 1e-2, 1.0 / std::sqrt(t));
  if (s.scale_parameter) step_lr *= std::max(s.eps2, rms(p, n));
  const double beta2t = 1.0 - std::pow(t, s.decay_rate);
  const double eps1 = s.eps1;
  std::vector<float> u(static_cast<std::size_t>(n));
  if (factored(a.param)) {
    const std::int64_t rows = rows_of(a.param), cols = cols_of(a.param);
    float *row = a.state[0].f32(), *col = a.state[1].f32();
    std::vector<double> col_mean(static_cast<std::size_t>(cols), 0.0);
    double row_total = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      double acc = 0;
      for (std::int64_t c = 0; c < cols; ++c) {
        const double sq = static_cast<double>(g[r * cols + c]) * g[r * cols + c] + eps1;
        acc += sq;
        col_mean[static_cast<std::size_t>(c)] += sq / static_cast<double>(rows);
      }
      row[r] =
          static_cast<float>(beta2t * row[r] + (1.0 - beta2t) * acc / static_cast<double>(cols));
      row_total += row[r];
    }
    for (std::int64_t c = 0; c < cols; ++c) {
      col[c] = static_cast<float>(beta2t * col[c] +
                                  (1.0 - beta2t) * col_mean[static_cast<std::size_t>(c)]);
    }
    const double row_avg = row_total / static_cast<double>(rows);
    for (std::int64_t r = 0; r < rows; ++r) {
      const double rf = 1.0 / std::sqrt(row[r] / row_avg);
      for (std::int64_t c = 0; c < cols; ++c) {
        u[static_cast<std::size_t>(r * cols + c)] =
            static_cast<float>(g[r * cols + c] * rf / std::sqrt(static_cast<double>(col[c])));
      }
    }
  } else {
    float* v = a.state[0].f32();
    for (std::int64_t i = 0; i < n; ++i) {
      v[i] = static_cast<float>(beta2t * v[i] +
                                (1.0 - beta2t) * (static_cast<double>(g[i]) * g[i] + eps1));
      u[static_cast<std::size_t>(i)] =
          static_cast<float>(g[i] / std::sqrt(static_cast<double>(v[i])));
    }
  }
  const double clip = std::max(1.0, rms(u.data(), n) / s.clip_threshold);
  const double beta1 = s.beta1;
  float* m = a.state[a.state.size() - 1].f32();
  for (std::int64_t i = 0; i < n; ++i) {
    double ui = u[static_cast<std::size_t>(i)] / clip * step_lr;
    if (beta1 > 0) {
      m[i] = static_cast<float>(beta1 * m[i] + (1.0 - beta1) * ui);
      ui = m[i];
    }
    p[i] = static_cast<float>(p[i] - a.wd * step_lr * p[i] - ui);
  }
}

}  // namespace mantissa::optim::detail
