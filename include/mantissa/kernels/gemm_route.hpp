#pragma once
// Which code and hardware run mantissa's matrix products on this CPU, chosen by measurement
// (docs/design.md section 3, docs/engine.md "Matrix products: routes"). Under `automatic`, the
// first product of each shape class times every route this CPU can run for a few
// milliseconds and keeps the fastest; the choices and their measured rates are kept in a
// table the program prints (`mantissa formats`, `mantissa bench train`), writes into a run's
// metrics and checkpoints, and caches per machine so the same machine chooses the same way
// next time. Nothing here prints: callers render route_records().
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mantissa/kernels/gemm.hpp"

namespace mantissa::kernels {

// The instruction set of the fp32 FMA route's micro-kernels.
enum class GemmIsa : std::uint8_t {
  scalar,  // std::fma loops: the twin every other ISA matches bit for bit
  avx2,    // AVX2 + FMA, 6 x 16 blocks
  avx512,  // AVX-512F, 12 x 32 blocks
};
inline constexpr NameTable<GemmIsa, 3> kGemmIsaNames = {{
    {"scalar", GemmIsa::scalar},
    {"avx2", GemmIsa::avx2},
    {"avx512", GemmIsa::avx512},
}};
static_assert(in_enum_order(kGemmIsaNames, static_cast<std::size_t>(GemmIsa::avx512) + 1));
std::string_view gemm_isa_name(GemmIsa isa);
bool cpu_supports(GemmIsa isa);
GemmIsa best_gemm_isa();
// The ISA the fp32 route uses now: best_gemm_isa() unless set_gemm_isa chose another.
GemmIsa active_gemm_isa();
// For tests and benchmarks; throws mantissa::Error if this CPU cannot run `isa`.
void set_gemm_isa(GemmIsa isa);

// What oneDNN offers for bf16 products on this CPU, asked once.
struct NativeBf16 {
  bool available = false;     // oneDNN creates a bf16 matmul here (AVX512-BF16 or AMX)
  bool matrix_units = false;  // ... on AMX tiles
  std::string isa;            // oneDNN's implementation name, e.g. "brg:avx512_core_amx"
};
const NativeBf16& native_bf16();

using precision::route_name;

// The routes that multiply bf16 values on bf16 units (bf16, onednn_bf16, amx): float16 and
// cbfloat16 then take the exact hi/lo split into bf16 passes.
constexpr bool on_bf16_units(MatmulRoute route) {
  return route == MatmulRoute::bf16 || route == MatmulRoute::onednn_bf16 ||
         route == MatmulRoute::amx;
}

// Whether `route` (not automatic) can multiply values of `format` on this CPU: the bf16
// routes need bf16 values in every pass (every H and fp8 format, not float32) and the CPU's
// bf16 instructions (AVX512-BF16 for mantissa's bf16 route, oneDNN's bf16 matmul for
// onednn_bf16, AMX tiles the operating system lets this process use for amx). Returns ""
// when it can, else the reason.
std::string route_unavailable(MatmulRoute route, Format format);
// The routes products of `format` can take on this CPU, in table order.
std::vector<MatmulRoute> routes_for(Format format);

// The preference that holds for products of `format`: a bf16 route asked for applies to
// products of bf16 values (half and fp8 formats); float32 products (mixed precision off)
// choose among the fp32 routes as under automatic.
MatmulRoute effective_preference(Format format, MatmulRoute preference);

// Throws mantissa::Error (naming `key`, the route, the format and what this
// CPU has) when `preference` is a route that cannot run products of `format` here.
void check_route(Format format, MatmulRoute preference,
                 std::string_view key = "precision.matmul_route");

// What a route is chosen for: a matrix product, or one of a convolution's three products.
// A convolution's routes are the same four (docs/engine.md "Convolutions: routes"): fp32 and
// bf16 are im2col + mantissa's GEMM on that route (the reference), onednn_fp32 and
// onednn_bf16 oneDNN's convolution primitives.
enum class ProductKind : std::uint8_t {
  matmul,
  conv_forward,           // y = conv(x, w) (+ bias)
  conv_backward_data,     // dx from dy and w
  conv_backward_weights,  // dw (and the bias gradient) from x and dy
};
inline constexpr NameTable<ProductKind, 4> kProductKindNames = {{
    {"matmul", ProductKind::matmul},
    {"conv_fwd", ProductKind::conv_forward},
    {"conv_bwd_data", ProductKind::conv_backward_data},
    {"conv_bwd_weights", ProductKind::conv_backward_weights},
}};
static_assert(static_cast<std::size_t>(ProductKind::conv_backward_weights) + 1 ==
              kProductKindNames.size());

// A convolution's shape (all zero for a matrix product): NCHW input [batch, channels, height,
// width], OIHW weight [out_channels, channels, kernel_h, kernel_w], square stride and padding.
struct ConvKey {
  std::int64_t batch = 0, channels = 0, height = 0, width = 0, out_channels = 0;
  std::int64_t kernel_h = 0, kernel_w = 0, stride = 0, padding = 0;
  bool bias = false;
  auto operator<=>(const ConvKey&) const = default;
};

// One class of products that get one route: the shape, the transposes, the values' format,
// the pass count and whether the product runs on all threads or inside a thread. An
// attention head (causal attention over t positions of width d, one thread) is one class
// too, m = n = t, k = d, NT: all its products take one route, and bf16 there means the fused
// bf16 head kernel where the values are bf16 in one pass (mantissa's GEMM otherwise). For a
// convolution, m x n x k is the im2col product it amounts to (forward: out_channels x
// batch * out_h * out_w x channels * kernel_h * kernel_w), which its GFLOP/s count.
struct GemmKey {
  std::int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  Format format = Format::float32;
  int passes = 1;
  bool all_threads = true;
  bool attention_head = false;
  ProductKind kind = ProductKind::matmul;
  ConvKey conv{};
  auto operator<=>(const GemmKey&) const = default;
};
// The key of one of a convolution's products (m, n, k and the transposes derived from it).
// Throws mantissa::Error for a shape with no output or a non-positive size.
GemmKey conv_key(ProductKind kind, const ConvKey& conv, Format format, int passes,
                 bool all_threads);
// "2048x1536x384 NT bfloat16 1 pass, all threads"; "attention head t256 d64 bfloat16 1 pass";
// "conv_bwd_weights 128x16x14x14 o32 k3x3 s1 p1 +bias bfloat16 1 pass, all threads".
std::string describe(const GemmKey& key);

// route_unavailable for one product class: a convolution's onednn_bf16 route also needs its
// values in one bf16 pass (bfloat16, fp8, or float16 / cbfloat16 at POL 2) and oneDNN's bf16
// convolutions on this CPU. routes_for: the routes the key's products can take here.
std::string route_unavailable(MatmulRoute route, const GemmKey& key);
std::vector<MatmulRoute> routes_for(const GemmKey& key);

// How a route was chosen for a key.
enum class RouteSource : std::uint8_t {
  measured,  // timed here, in this process
  cached,    // read from this machine's route cache (measured by an earlier process)
  pinned,    // set by pin_routes (a resumed run takes its checkpoint's routes)
  asked,     // precision.matmul_route named it
};
inline constexpr NameTable<RouteSource, 4> kRouteSourceNames = {{
    {"measured", RouteSource::measured},
    {"cached", RouteSource::cached},
    {"pinned", RouteSource::pinned},
    {"asked", RouteSource::asked},
}};
static_assert(in_enum_order(kRouteSourceNames, static_cast<std::size_t>(RouteSource::asked) + 1));

struct RouteRecord {
  GemmKey key;
  MatmulRoute route = MatmulRoute::fp32;
  // GFLOP/s measured per route (index: the MatmulRoute value; 0 = not measured or cannot run).
  std::array<double, kMatmulRouteCount> gflops{};
  RouteSource source = RouteSource::measured;
};

// The route a product of this key takes under `preference`. A named route is checked
// (check_route) and returned. Under automatic: the table's entry for the key, else the
// machine cache's, else a measurement: `probe(route)` runs the product once on that route
// (with results discarded); every route this CPU can run for the format is timed (one
// warm-up call, then calls until about 2 ms have passed, at most 20; the fastest call
// counts) and the fastest is kept. Thread-safe; measurement happens once per key.
MatmulRoute choose_route(const GemmKey& key, MatmulRoute preference,
                         const std::function<void(MatmulRoute)>& probe);

// The route products of this key take under `preference`, as far as it is known without
// running one: the route `preference` names, else the choice already made for the key (in this
// process, pinned, or in the machine's cache); nullopt while automatic has not chosen yet.
std::optional<MatmulRoute> known_route(const GemmKey& key, MatmulRoute preference);

// The route of an n x n x n product of `format` values at `passes` on all threads, chosen
// under automatic (measured here, or from the cache) with operands made here: the sample
// `mantissa formats` shows. Returns its record.
RouteRecord sample_route(Format format, int passes, std::int64_t n);

// Every choice made under automatic in this process, in key order.
std::vector<RouteRecord> route_records();
// One record as one line of text ("2048 1536 384 NT bfloat16 1 all bf16 95.1 100.2 170.5
// 196.7 0": key (threads "all", "thread", or "head" for an attention head), route, GFLOP/s
// per route in table order) and back: nullopt for a line that does not parse or holds a
// value out of range (a size past 2^40, a rate that is negative, not finite or past 10^9
// GFLOP/s). The machine cache and checkpoints use it.
// A convolution's line starts with its product_prefix ("conv_fwd 128 16 14 14 32 3 3 1 1
// bias", or "nobias"), then the line of its im2col product, which must be the product the
// prefix's shape makes (conv_key).
std::string route_record_line(const RouteRecord& rec);
std::optional<RouteRecord> parse_route_record_line(const std::string& line);
// The prefix of a convolution's line ("" for a matrix product): its kind and ConvKey fields.
std::string product_prefix(const GemmKey& key);

// Takes these choices for their keys from now on (source pinned), e.g. a checkpoint's.
// Returns the records it could not take (a route this CPU cannot run); those keys are
// measured again when used.
std::vector<RouteRecord> pin_routes(const std::vector<RouteRecord>& records);
// Forgets every choice of this process (tests, benchmarks).
void clear_routes();

// The clock measurements read (seconds, monotonic). Tests inject a fake one; an empty
// function restores the steady clock.
void set_route_clock(std::function<double()> clock);

// The machine's route cache: a text file of earlier measurements keyed by the CPU and this
// library's version. Path: $MANTISSA_ROUTE_CACHE when set ("off" disables it), else
// $XDG_CACHE_HOME/mantissa/routes.txt, else $HOME/.cache/mantissa/routes.txt.
struct RouteCacheStatus {
  std::string path;  // "" when off
  std::string note;  // why it is off, or what went wrong reading or writing it ("" if fine)
  int entries = 0;   // entries for this CPU and version read from it
};
RouteCacheStatus route_cache_status();
// Forgets this machine's cached routes (removes the cache file of this CPU and version) and
// this process's choices, so that every shape is measured again: for a cache written while
// the machine was busy. Returns the file removed ("" when there was none or the cache is off);
// throws mantissa::Error naming the file when it exists and cannot be removed.
std::string forget_cached_routes();
// Takes the default cache file again (its name depends on the active GEMM micro-kernels:
// call after set_gemm_isa), dropping this process's choices.
void reload_route_cache();
// Uses `path` from now on ("" = off), dropping this process's cached choices. For tests.
void set_route_cache_path(const std::string& path);
// "AMD EPYC 9R14 (family 25 model 17)": what the cache is keyed by, and what runs print.
const std::string& cpu_identity();

// One line for a format under `preference` (no product run): "bfloat16: automatic (measured
// per product shape among fp32, onednn_fp32, bf16, onednn_bf16)" or
// "bfloat16: bf16 (mantissa GEMM, AVX512-BF16 dot products), 1 pass".
std::string describe_route(Format half, int opt_level, MatmulRoute preference);
// The records as a table, one product shape a row: the route taken, how it was chosen, and
// the GFLOP/s measured on each route ("-" where not measured or not runnable here); a first
// line names the CPU and the route cache.
std::string route_table_text(const std::vector<RouteRecord>& records);

// Whether the products of `half` values multiply in float32 (precision::is_fp32_route), which
// makes POL 0 and 1 compute the same bits (precision::same_bits_opt_levels): before any
// product runs, under `preference` (the route named, or every route automatic chooses among
// on this CPU); after, as `records` show (every product of `half` routed so far; false when
// there is none).
bool takes_fp32_routes(Format half, MatmulRoute preference);
bool took_fp32_routes(Format half, const std::vector<RouteRecord>& records);

// One line for a concrete route: "bf16 (mantissa GEMM, AVX512-BF16 dot products)".
std::string describe_concrete_route(MatmulRoute route);

}  // namespace mantissa::kernels
