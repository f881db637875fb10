#pragma once
// Differentiable ops. Each reads the current precision Policy (precision/policy.hpp):
// matmul-class ops take inputs rounded to H and accumulate in fp32; reductions, norms,
// softmax and losses compute in fp32; every op stores its output in H (float32 when mixed
// precision is off). Shapes are checked; a mismatch throws mantissa::Error naming the op.
#include <cstdint>
#include <memory>
#include <vector>

#include "mantissa/autograd/variable.hpp"
#include "mantissa/precision/fp8.hpp"
#include "mantissa/precision/recipe.hpp"
#include "mantissa/tensor/random.hpp"

namespace mantissa::autograd {

// Elementwise. `b` has a's shape or a suffix of it (broadcast over the leading dimensions,
// like a bias), or one element.
Variable add(const Variable& a, const Variable& b);
Variable sub(const Variable& a, const Variable& b);
Variable mul(const Variable& a, const Variable& b);
Variable scale(const Variable& a, float s);
Variable sum(const Variable& a);   // all elements -> one (fp32)
Variable mean(const Variable& a);  // all elements -> one (fp32)

// a [..., m, k] @ b [k, n] -> [..., m, n]; or batched: b [..., k, n] with a's leading dims.
Variable matmul(const Variable& a, const Variable& b);
// x [..., in] @ weight [out, in]^T + bias [out] (bias may be undefined).
Variable linear(const Variable& x, const Variable& weight, const Variable& bias);
// The same product in fp8 (precision/fp8.hpp), when the policy's fp8 is enabled: x and the
// weight cast to fp8 with `fp8`'s scales (amaxes recorded while gradients are on), the
// output gradient too in the backward; products in float32 scaled back by the scales' inverse;
// the bias and the result in the policy's H. Without fp8 enabled: linear(x, weight, bias).
Variable linear(const Variable& x, const Variable& weight, const Variable& bias,
                const std::shared_ptr<precision::Fp8Meta>& fp8);
// The same product under layer `quant`'s recipe (precision/recipe.hpp), when the policy's fp8
// is enabled (the switch for every recipe): delayed as above; the others quantize x, the
// weight (once per weight version) and, in the backward, the output gradient per GEMM role,
// row-wise and column-wise copies each from high precision, and multiply the quantized
// values exactly with float32 sums (quant/block_operand.hpp). Without fp8 enabled, or
// without `quant`: linear(x, weight, bias).
Variable linear(const Variable& x, const Variable& weight, const Variable& bias,
                const std::shared_ptr<precision::LinearQuant>& quant);

Variable relu(const Variable& x);
Variable gelu(const Variable& x);  // tanh form
// Zeroes each element with probability p and scales the rest by 1/(1-p); identity when
// !training or p == 0. Draws one value per element from `rng`, as one block (Rng::begin_block):
// x batch-major, so that data-parallel processes draw their parts of one process's mask.
Variable dropout(const Variable& x, float p, bool training, tensor::Rng& rng);

// Over the last dimension.
Variable layer_norm(const Variable& x, const Variable& gamma, const Variable& beta,
                    float eps = 1e-5f);
Variable softmax(const Variable& x);
Variable log_softmax(const Variable& x);
// logits [n, classes], targets n ids -> mean loss over targets != ignore_index (fp32).
Variable cross_entropy(const Variable& logits, const std::vector<std::int32_t>& targets,
                       std::int32_t ignore_index = -100);

// Rows of table [vocab, dim] picked by ids -> [ids_shape..., dim].
Variable embedding(const Variable& table, const std::vector<std::int32_t>& ids,
                   const Shape& ids_shape);

Variable reshape(const Variable& x, const Shape& shape);
Variable transpose(const Variable& x, int a, int b);  // materialized (contiguous) result
Variable concat(const std::vector<Variable>& parts, int dim);
std::vector<Variable> split(const Variable& x, const std::vector<std::int64_t>& sizes, int dim);

// x [n, c, h, w], weight [o, c, kh, kw], bias [o] (may be undefined) -> [n, o, oh, ow].
Variable conv2d(const Variable& x, const Variable& weight, const Variable& bias,
                std::int64_t stride = 1, std::int64_t padding = 0);
Variable max_pool2d(const Variable& x, std::int64_t kernel, std::int64_t stride);
// max_pool2d(relu(x), kernel, stride) in one pass and one node: the same values and gradients
// (relu and max commute), without relu's full-size result in memory.
Variable relu_max_pool2d(const Variable& x, std::int64_t kernel, std::int64_t stride);

// Fused causal multi-head self-attention: q, k, v [b, heads, t, d] -> [b, heads, t, d],
// softmax(q k^T / sqrt(d) + causal mask) v, computed blockwise (kernels/attention.hpp).
Variable causal_attention(const Variable& q, const Variable& k, const Variable& v);

// The same attention straight from a fused projection: qkv [b, t, 3c] holds q, k, v as its
// column thirds, each split into `heads` heads of c / heads columns; returns [b, t, c] with
// the heads side by side (what the output projection reads). No transposes or copies:
// the kernel reads and writes the heads in place.
Variable causal_self_attention(const Variable& qkv, std::int64_t heads);

}  // namespace mantissa::autograd
