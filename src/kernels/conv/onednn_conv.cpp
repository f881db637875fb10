#include "onednn_conv.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "../onednn_engine.hpp"
#include "mantissa/error.hpp"

namespace mantissa::kernels::conv_detail {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

dt source_dt(SourceType t) {
  return t == SourceType::bf16 ? dt::bf16 : dt::f32;
}

std::int64_t out_h(const ConvKey& c) {
  return (c.height + 2 * c.padding - c.kernel_h) / c.stride + 1;
}
std::int64_t out_w(const ConvKey& c) {
  return (c.width + 2 * c.padding - c.kernel_w) / c.stride + 1;
}

dims src_dims(const ConvKey& c) {
  return {c.batch, c.channels, c.height, c.width};
}
dims dst_dims(const ConvKey& c) {
  return {c.batch, c.out_channels, out_h(c), out_w(c)};
}
dims weight_dims(const ConvKey& c) {
  return {c.out_channels, c.channels, c.kernel_h, c.kernel_w};
}

// One argument of a primitive: the user's plain memory descriptor, the primitive's, and when
// they differ the reorder between them and the primitive-side buffer (made once).
struct Arg {
  int id = 0;  // DNNL_ARG_*
  bool output = false;
  dnnl::memory::desc user, inner;
  std::unique_ptr<dnnl::memory> buffer;  // inner layout, when it differs from user
  std::unique_ptr<dnnl::reorder> reorder;
};

struct Cached {
  std::mutex mu;  // one call at a time uses the buffers
  dnnl::primitive primitive;
  std::vector<Arg> args;
};

void add_arg(Cached& c, int id, bool output, const dnnl::memory::desc& user,
             const dnnl::memory::desc& inner) {
  Arg a;
  a.id = id;
  a.output = output;
  a.user = user;
  a.inner = inner;
  if (user != inner) {
    a.buffer = std::make_unique<dnnl::memory>(inner, onednn_engine());
    a.reorder = std::make_unique<dnnl::reorder>(
        output ? dnnl::reorder::primitive_desc(onednn_engine(), inner, onednn_engine(), user)
               : dnnl::reorder::primitive_desc(onednn_engine(), user, onednn_engine(), inner));
  }
  c.args.push_back(std::move(a));
}

// The forward's primitive descriptor with every layout left to oneDNN (format_tag::any).
dnnl::convolution_forward::primitive_desc forward_pd(const ConvKey& c, SourceType type) {
  const dt s = source_dt(type);
  const dnnl::memory::desc src(src_dims(c), s, tag::any), wei(weight_dims(c), s, tag::any);
  const dnnl::memory::desc dst(dst_dims(c), dt::f32, tag::any);
  const dims strides{c.stride, c.stride}, pad{c.padding, c.padding};
  if (c.bias) {
    const dnnl::memory::desc bias({c.out_channels}, dt::f32, tag::x);
    return {dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                            dnnl::algorithm::convolution_direct, src, wei, bias,
                                            dst, strides, pad, pad),
            onednn_engine()};
  }
  return {dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                          dnnl::algorithm::convolution_direct, src, wei, dst,
                                          strides, pad, pad),
          onednn_engine()};
}

std::unique_ptr<Cached> make(const ConvKey& c, ProductKind kind, SourceType type) {
  auto out = std::make_unique<Cached>();
  const dt s = source_dt(type);
  const dnnl::memory::desc x_user(src_dims(c), s, tag::nchw), w_user(weight_dims(c), s, tag::oihw);
  const dnnl::memory::desc y_user(dst_dims(c), dt::f32, tag::nchw);
  const dnnl::memory::desc dx_user(src_dims(c), dt::f32, tag::nchw);
  const dnnl::memory::desc dy_user(dst_dims(c), s, tag::nchw);
  const dnnl::memory::desc dw_user(weight_dims(c), dt::f32, tag::oihw);
  const dnnl::memory::desc b_user({c.out_channels}, dt::f32, tag::x);
  const dims strides{c.stride, c.stride}, pad{c.padding, c.padding};
  const auto any = [](const dims& d, dt t) { return dnnl::memory::desc(d, t, tag::any); };
  const auto fwd = forward_pd(c, type);
  switch (kind) {
    case ProductKind::conv_forward:
      out->primitive = dnnl::convolution_forward(fwd);
      add_arg(*out, DNNL_ARG_SRC, false, x_user, fwd.src_desc());
      add_arg(*out, DNNL_ARG_WEIGHTS, false, w_user, fwd.weights_desc());
      if (c.bias) add_arg(*out, DNNL_ARG_BIAS, false, b_user, fwd.bias_desc());
      add_arg(*out, DNNL_ARG_DST, true, y_user, fwd.dst_desc());
      break;
    case ProductKind::conv_backward_data: {
      const dnnl::convolution_backward_data::primitive_desc pd(
          dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct,
                                                any(src_dims(c), dt::f32), any(weight_dims(c), s),
                                                any(dst_dims(c), s), strides, pad, pad),
          onednn_engine(), fwd);
      out->primitive = dnnl::convolution_backward_data(pd);
      add_arg(*out, DNNL_ARG_DIFF_DST, false, dy_user, pd.diff_dst_desc());
      add_arg(*out, DNNL_ARG_WEIGHTS, false, w_user, pd.weights_desc());
      add_arg(*out, DNNL_ARG_DIFF_SRC, true, dx_user, pd.diff_src_desc());
      break;
    }
    case ProductKind::conv_backward_weights: {
      const auto wd = any(weight_dims(c), dt::f32);
      const auto xd = any(src_dims(c), s), dyd = any(dst_dims(c), s);
      const auto desc =
          c.bias
              ? dnnl::convolution_backward_weights::desc(
                    dnnl::algorithm::convolution_direct, xd, wd,
                    dnnl::memory::desc({c.out_channels}, dt::f32, tag::x), dyd, strides, pad, pad)
              : dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, xd,
                                                         wd, dyd, strides, pad, pad);
      const dnnl::convolution_backward_weights::primitive_desc pd(desc, onednn_engine(), fwd);
      out->primitive = dnnl::convolution_backward_weights(pd);
      add_arg(*out, DNNL_ARG_SRC, false, x_user, pd.src_desc());
      add_arg(*out, DNNL_ARG_DIFF_DST, false, dy_user, pd.diff_dst_desc());
      add_arg(*out, DNNL_ARG_DIFF_WEIGHTS, true, dw_user, pd.diff_weights_desc());
      if (c.bias) add_arg(*out, DNNL_ARG_DIFF_BIAS, true, b_user, pd.diff_bias_desc());
      break;
    }
    case ProductKind::matmul:
      throw Error("onednn_conv: a matrix product is not a convolution's");
  }
  return out;
}

Cached& cached(const ConvKey& c, ProductKind kind, SourceType type) {
  using Key = std::tuple<ConvKey, ProductKind, SourceType>;
  static std::mutex mu;
  static std::map<Key, std::unique_ptr<Cached>> table;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = table[Key{c, kind, type}];
  if (!slot) {
    try {
      slot = make(c, kind, type);
    } catch (const dnnl::error& e) {
      table.erase(Key{c, kind, type});
      throw Error("conv2d: oneDNN could not create a " +
                  std::string(name_of(kProductKindNames, kind)) + " convolution for " +
                  describe(GemmKey{.kind = kind, .conv = c}) + " (" + e.what() + ")");
    }
  }
  return *slot;
}

// Runs the primitive on the user's buffers (in argument order), reordering at the edges.
void run(Cached& prim, std::initializer_list<void*> buffers) {
  std::lock_guard<std::mutex> lock(prim.mu);
  dnnl::stream stream(onednn_engine());
  std::unordered_map<int, dnnl::memory> args;
  std::vector<std::pair<dnnl::reorder*, std::pair<dnnl::memory, dnnl::memory>>> after;
  auto it = buffers.begin();
  for (Arg& a : prim.args) {
    dnnl::memory user(a.user, onednn_engine(), *it++);
    if (!a.buffer) {
      args.emplace(a.id, user);
      continue;
    }
    if (!a.output) a.reorder->execute(stream, user, *a.buffer);
    if (a.output) after.push_back({a.reorder.get(), {*a.buffer, user}});
    args.emplace(a.id, *a.buffer);
  }
  prim.primitive.execute(stream, args);
  for (auto& [r, mems] : after) r->execute(stream, mems.first, mems.second);
  stream.wait();
}

}  // namespace

void onednn_conv_forward(const ConvKey& c, SourceType type, const void* x, const void* w,
                         const float* bias, float* y) {
  Cached& prim = cached(c, ProductKind::conv_forward, type);
  if (c.bias) {
    run(prim, {const_cast<void*>(x), const_cast<void*>(w), const_cast<float*>(bias), y});
  } else {
    run(prim, {const_cast<void*>(x), const_cast<void*>(w), y});
  }
}

void onednn_conv_backward_data(const ConvKey& c, SourceType type, const void* dy, const void* w,
                               float* dx) {
  run(cached(c, ProductKind::conv_backward_data, type),
      {const_cast<void*>(dy), const_cast<void*>(w), dx});
}

void onednn_conv_backward_weights(const ConvKey& c, SourceType type, const void* x, const void* dy,
                                  float* dw, float* db) {
  Cached& prim = cached(c, ProductKind::conv_backward_weights, type);
  if (c.bias) {
    run(prim, {const_cast<void*>(x), const_cast<void*>(dy), dw, db});
  } else {
    run(prim, {const_cast<void*>(x), const_cast<void*>(dy), dw});
  }
}

bool onednn_bf16_conv_available() {
  static const bool available = [] {
    try {
      const ConvKey c{.batch = 2,
                      .channels = 16,
                      .height = 8,
                      .width = 8,
                      .out_channels = 16,
                      .kernel_h = 3,
                      .kernel_w = 3,
                      .stride = 1,
                      .padding = 1,
                      .bias = false};
      const auto pd = forward_pd(c, SourceType::bf16);
      const std::string impl = pd.impl_info_str();
      return impl.rfind("ref", 0) != 0;  // oneDNN's reference code is no route
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return available;
}

}  // namespace mantissa::kernels::conv_detail
