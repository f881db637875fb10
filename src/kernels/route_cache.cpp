#include "route_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "mantissa/error.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "mantissa/numerics/format.hpp"

#ifndef MANTISSA_VERSION_STRING
#define MANTISSA_VERSION_STRING "unknown"
#endif

namespace mantissa::kernels {
namespace {

// Bumped whenever a route's kernels change enough that old measurements no longer hold:
// 2 since the AMX attention heads, the GEMM's thread grid and own-B packing; 3 since the pair
// kernels take float16 / cbfloat16 / fp8 operands through bfloat16 part copies (2026-11-27);
// 4 since oneDNN's routes take whole products within their scratch budget (2026-11-27);
// 5 since the AVX2 packing stores narrow panels without masked stores (2026-11-27); 6 since
// the AVX2 route's deeper blocks and prefetches (2026-11-28).
constexpr int kGeneration = 6;
constexpr std::int64_t kMaxFileBytes = 4 << 20;
constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;
constexpr double kMaxRate = 1e9;  // GFLOP/s

// The fp32 route's micro-kernels are part of what was measured: rates taken with others
// (`bench train --gemm-isa avx2` on an AVX-512 CPU) go to a file of their own.
std::string identity() {
  std::string id = cpu_identity() + ", mantissa " + MANTISSA_VERSION_STRING + ", routes " +
                   std::to_string(kGeneration);
  if (active_gemm_isa() != best_gemm_isa())
    id += ", gemm " + std::string(gemm_isa_name(active_gemm_isa()));
  return id;
}

std::string hex_hash(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string errno_text() {
  return std::strerror(errno);
}

// Closes a descriptor when it goes out of scope.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// The cache's lock within a bounded wait: a holder that never lets go (a process stopped
// with Ctrl-Z while it appends, a stale network lock) must not stall training. False (errno
// EWOULDBLOCK) when the wait ran out.
bool lock_within(int fd) {
  constexpr int kTries = 200;  // 200 x 10 ms: 2 s
  for (int i = 0; i < kTries; ++i) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
    if (errno != EWOULDBLOCK && errno != EINTR) return false;
    ::usleep(10000);
  }
  errno = EWOULDBLOCK;
  return false;
}

}  // namespace

RouteCacheLocation default_route_cache_path() {
  std::string dir;
  if (const char* env = std::getenv("MANTISSA_ROUTE_CACHE")) {
    if (std::string(env) == "off") return {"", "off (MANTISSA_ROUTE_CACHE=off)"};
    dir = env;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') {
    // (the XDG specification: a relative path is ignored, as if unset)
    dir = std::string(xdg) + "/mantissa";
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != 0) {
    dir = std::string(home) + "/.cache/mantissa";
  }
  if (dir.empty()) {
    return {"", "off (no MANTISSA_ROUTE_CACHE, absolute XDG_CACHE_HOME or HOME)"};
  }
  return {dir + "/routes-" + hex_hash(identity()) + ".txt", ""};
}

RouteCache::RouteCache(RouteCacheLocation where)
    : path_(std::move(where.path)), note_(std::move(where.note)) {}

RouteCache::RouteCache(const std::string& dir)
    : RouteCache(dir.empty()
                     ? RouteCacheLocation{"", "off"}
                     : RouteCacheLocation{dir + "/routes-" + hex_hash(identity()) + ".txt", ""}) {}

std::string route_record_line(const RouteRecord& rec) {
  std::ostringstream out;
  const GemmKey& k = rec.key;
  if (k.kind != ProductKind::matmul) out << product_prefix(k) << ' ';
  out << k.m << ' ' << k.n << ' ' << k.k << ' ' << (k.trans_a ? 'T' : 'N')
      << (k.trans_b ? 'T' : 'N') << ' ' << numerics::name(k.format) << ' ' << k.passes << ' '
      << (k.attention_head ? "head"
          : k.all_threads  ? "all"
                           : "thread")
      << ' ' << route_name(rec.route);
  for (double g : rec.gflops) out << ' ' << g;
  return out.str();
}

std::optional<RouteRecord> parse_route_record_line(const std::string& line) {
  std::istringstream in(line);
  RouteRecord rec;
  GemmKey& k = rec.key;
  // A convolution's prefix: its product and shape ("conv_fwd 128 16 14 14 32 3 3 1 1 bias").
  if (const std::size_t first = line.find_first_not_of(' ');
      first != std::string::npos && (line[first] < '0' || line[first] > '9')) {
    std::string kind, bias;
    ConvKey& c = k.conv;
    if (!(in >> kind >> c.batch >> c.channels >> c.height >> c.width >> c.out_channels >>
          c.kernel_h >> c.kernel_w >> c.stride >> c.padding >> bias)) {
      return std::nullopt;
    }
    const std::optional<ProductKind> pk = find_named(kProductKindNames, kind);
    if (!pk || *pk == ProductKind::matmul || (bias != "bias" && bias != "nobias")) {
      return std::nullopt;
    }
    for (std::int64_t v : {c.batch, c.channels, c.height, c.width, c.out_channels, c.kernel_h,
                           c.kernel_w, c.stride, c.padding}) {
      if (v < 0 || v > kMaxDim) return std::nullopt;
    }
    k.kind = *pk;
    c.bias = bias == "bias";
  }
  std::string trans, format, threads, route;
  if (!(in >> k.m >> k.n >> k.k >> trans >> format >> k.passes >> threads >> route)) {
    return std::nullopt;
  }
  if (k.m < 0 || k.n < 0 || k.k < 0 || k.m > kMaxDim || k.n > kMaxDim || k.k > kMaxDim) {
    return std::nullopt;
  }
  if (trans.size() != 2 || (trans[0] != 'N' && trans[0] != 'T') ||
      (trans[1] != 'N' && trans[1] != 'T')) {
    return std::nullopt;
  }
  k.trans_a = trans[0] == 'T';
  k.trans_b = trans[1] == 'T';
  const std::optional<Format> f = numerics::parse_format(format);
  if (!f || !numerics::is_tensor_format(*f)) return std::nullopt;
  k.format = *f;
  if (k.passes != 1 && k.passes != 3 && k.passes != 4) return std::nullopt;
  if (threads != "all" && threads != "thread" && threads != "head") return std::nullopt;
  k.all_threads = threads == "all";
  k.attention_head = threads == "head";
  // A head is t x t x d, NT.
  if (k.attention_head && (k.m != k.n || k.trans_a || !k.trans_b)) return std::nullopt;
  const std::optional<MatmulRoute> r = find_named(precision::kMatmulRouteNames, route);
  if (!r || *r == MatmulRoute::automatic) return std::nullopt;
  rec.route = *r;
  // One rate per route in table order; lines written before the amx route existed have one
  // fewer (its rate is then 0: not measured).
  std::vector<double> rates;
  for (double g = 0; rates.size() <= rec.gflops.size() && in >> g;) rates.push_back(g);
  if (!in.eof()) return std::nullopt;  // a word that is not a rate, or one rate too many
  if (rates.size() != rec.gflops.size() && rates.size() + 1 != rec.gflops.size()) {
    return std::nullopt;
  }
  for (std::size_t i = 0; i < rates.size(); ++i) {
    // No CPU multiplies at 10^18 FLOP/s: a larger rate is no measurement (a hand-edited or
    // damaged line), and tables that print rates would print it at full length.
    if (!std::isfinite(rates[i]) || rates[i] < 0 || rates[i] > kMaxRate) return std::nullopt;
    rec.gflops[i] = rates[i];
  }
  if (k.kind != ProductKind::matmul) {  // the product must be the one its shape makes
    try {
      const GemmKey made = conv_key(k.kind, k.conv, k.format, k.passes, k.all_threads);
      if (made != k) return std::nullopt;
    } catch (const Error&) {
      return std::nullopt;
    }
  }
  rec.source = RouteSource::cached;
  return rec;
}

void RouteCache::turn_off(const std::string& why) {
  note_ = "off: " + why;
  path_.clear();
  loaded_ = true;
}

void RouteCache::load() {
  loaded_ = true;
  if (path_.empty()) return;
  Fd f{::open(path_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) {
    if (errno != ENOENT) turn_off("cannot read " + path_ + ": " + errno_text());
    return;
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    turn_off(path_ + " is not a regular file");
    return;
  }
  if (st.st_size > kMaxFileBytes) {
    turn_off(path_ + " is larger than " + std::to_string(kMaxFileBytes) + " bytes");
    return;
  }
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(f.fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  std::istringstream lines(text);
  std::string line;
  int bad = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (std::optional<RouteRecord> rec = parse_route_record_line(line)) {
      entries_.emplace(rec->key, *rec);  // the first record of a key counts
    } else {
      ++bad;
    }
  }
  if (bad > 0) note_ = std::to_string(bad) + " malformed line(s) in " + path_ + " ignored";
}

std::optional<RouteRecord> RouteCache::find(const GemmKey& key) {
  if (!loaded_) load();
  const auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

RouteRecord RouteCache::add(const RouteRecord& rec) {
  if (!loaded_) load();
  if (path_.empty()) return rec;
  std::error_code ec;
  const std::filesystem::path file(path_);
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) {
    turn_off("cannot create " + file.parent_path().string() + ": " + ec.message());
    return rec;
  }
  Fd lock{::open((path_ + ".lock").c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644)};
  if (lock.fd < 0 || !lock_within(lock.fd)) {
    if (lock.fd >= 0 && errno == EWOULDBLOCK) {
      note_ = "on; a shape was not recorded: another process held " + path_ + ".lock for 2 s";
      return rec;
    }
    turn_off("cannot lock " + path_ + ".lock: " + errno_text());
    return rec;
  }
  // Under the lock: what other processes added since this one read the file.
  entries_.clear();
  load();
  if (path_.empty()) return rec;
  if (const auto it = entries_.find(rec.key); it != entries_.end()) return it->second;
  Fd out{::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644)};
  struct stat st {};
  if (out.fd < 0 || ::fstat(out.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    turn_off("cannot write " + path_ + ": " + errno_text());
    return rec;
  }
  std::string text;
  if (st.st_size == 0) text = "# mantissa route cache: " + identity() + "\n";
  text += route_record_line(rec) + "\n";
  std::size_t put = 0;
  while (put < text.size()) {
    const ssize_t n = ::write(out.fd, text.data() + put, text.size() - put);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      turn_off("cannot write " + path_ + ": " + errno_text());
      return rec;
    }
    put += static_cast<std::size_t>(n);
  }
  entries_.emplace(rec.key, rec);
  return rec;
}

std::string RouteCache::forget() {
  entries_.clear();
  loaded_ = true;
  if (path_.empty()) return "";
  Fd lock{::open((path_ + ".lock").c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644)};
  if (lock.fd >= 0 && !lock_within(lock.fd)) {
    throw Error("cannot remove the route cache " + path_ + ": another process holds " + path_ +
                ".lock");
  }
  if (::unlink(path_.c_str()) != 0) {
    if (errno == ENOENT) return "";
    throw Error("cannot remove the route cache " + path_ + ": " + errno_text());
  }
  return path_;
}

RouteCacheStatus RouteCache::status() const {
  return {path_, note_, static_cast<int>(entries_.size())};
}

}  // namespace mantissa::kernels
