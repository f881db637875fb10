// Lion (Chen et al. 2023) and Adafactor (Shazeer & Stern 2018, with the update clipping and
// relative step-size scaling of the common implementations; the learning rate comes from
// the schedule, so there is no relative_step mode).
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

std::vector<Definition> sign_and_factored_family() {
  Definition lion{
      "lion",
      {{"beta1", 0.9}, {"beta2", 0.99}, {"weight_decay", 0.0}},
      fixed_states({"exp_avg"}),
      [](const auto& h, float* p, const float* g, std::vector<Tensor>& s, std::int64_t n, double lr,
         double wd, std::int64_t, const Variable&) {
        const auto b1 = static_cast<float>(h("beta1")), b2 = static_cast<float>(h("beta2"));
        const auto decay = static_cast<float>(1.0 - lr * wd), flr = static_cast<float>(lr);
        float* m = s[0].f32();
        for (std::int64_t i = 0; i < n; ++i) {
          const float c = b1 * m[i] + (1.0f - b1) * g[i];
          const float sign = c > 0 ? 1.0f : (c < 0 ? -1.0f : 0.0f);
          p[i] = p[i] * decay - flr * sign;
          m[i] = b2 * m[i] + (1.0f - b2) * g[i];
        }
      },
      {}};
  Definition adafactor{
      "adafactor",
      {{"eps1", 1e-30},
       {"eps2", 1e-3},
       {"clip_threshold", 1.0},
       {"decay_rate", -0.8},
       {"beta1", 0.0},
       {"weight_decay", 0.0},
       {"scale_parameter", 1.0}},
      [](const Variable& p) {
        return factored(p) ? std::vector<std::string>{"exp_avg_sq_row", "exp_avg_sq_col", "exp_avg"}
                           : std::vector<std::string>{"exp_avg_sq", "exp_avg"};
      },
      [](const auto& h, float* p, const float* g, std::vector<Tensor>& s, std::int64_t n, double lr,
         double wd, std::int64_t step, const Variable& param) {
        double step_lr = lr;
        if (h("scale_parameter") != 0.0) step_lr *= std::max(h("eps2"), rms(p, n));
        const double beta2t = 1.0 - std::pow(static_cast<double>(step), h("decay_rate"));
        const double eps1 = h("eps1");
        std::vector<float> u(static_cast<std::size_t>(n));
        if (factored(param)) {
          const std::int64_t rows = rows_of(param), cols = cols_of(param);
          float *row = s[0].f32(), *col = s[1].f32();
          std::vector<double> col_mean(static_cast<std::size_t>(cols), 0.0);
          double row_total = 0;
          for (std::int64_t r = 0; r < rows; ++r) {
            double acc = 0;
            for (std::int64_t c = 0; c < cols; ++c) {
              const double sq = static_cast<double>(g[r * cols + c]) * g[r * cols + c] + eps1;
              acc += sq;
              col_mean[static_cast<std::size_t>(c)] += sq / static_cast<double>(rows);
            }
            row[r] = static_cast<float>(beta2t * row[r] +
                                        (1.0 - beta2t) * acc / static_cast<double>(cols));
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
          float* v = s[0].f32();
          for (std::int64_t i = 0; i < n; ++i) {
            v[i] = static_cast<float>(beta2t * v[i] +
                                      (1.0 - beta2t) * (static_cast<double>(g[i]) * g[i] + eps1));
            u[static_cast<std::size_t>(i)] =
                static_cast<float>(g[i] / std::sqrt(static_cast<double>(v[i])));
          }
        }
        const double clip = std::max(1.0, rms(u.data(), n) / h("clip_threshold"));
        const double beta1 = h("beta1");
        float* m = s[s.size() - 1].f32();
        for (std::int64_t i = 0; i < n; ++i) {
          double ui = u[static_cast<std::size_t>(i)] / clip * step_lr;
          if (beta1 > 0) {
            m[i] = static_cast<float>(beta1 * m[i] + (1.0 - beta1) * ui);
            ui = m[i];
          }
          p[i] = static_cast<float>(p[i] - wd * step_lr * p[i] - ui);
        }
      },
      [](const std::string& name, const Variable& param, const auto&) {
        if (name == "exp_avg_sq_row") return Tensor::zeros(tensor::Shape{rows_of(param)});
        if (name == "exp_avg_sq_col") return Tensor::zeros(tensor::Shape{cols_of(param)});
        return Tensor::zeros(param.shape());
      }};
  return {lion, adafactor};
}

}  // namespace mantissa::optim::detail
