// Routes chosen by measurement (gemm_route.hpp): the process's table of choices, the
// measurement itself, and the hand-off to the machine's cache (route_cache.hpp).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "mantissa/error.hpp"
#include "mantissa/kernels/gemm_route.hpp"
#include "route_cache.hpp"

namespace mantissa::kernels {
namespace {

constexpr double kBudgetSeconds = 0.002;  // time each route this long ...
constexpr int kMaxCalls = 20;             // ... in at most this many calls (after a warm-up)

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Selector {
  std::mutex mu;
  std::map<GemmKey, RouteRecord> table;
  std::function<double()> clock = steady_seconds;
  RouteCache cache{default_route_cache_path()};
};

Selector& selector() {
  static Selector s;
  return s;
}

// Bumped whenever a choice may change (clear, pin, a new cache): each thread's copy of the
// choices is then dropped. Products look their key up in their thread's copy first, without
// a lock (attention runs thousands of small products a step on every thread).
std::atomic<std::uint64_t> g_generation{1};

struct ThreadChoices {
  std::uint64_t generation = 0;
  std::map<GemmKey, MatmulRoute> routes;
};
ThreadChoices& thread_choices() {
  thread_local ThreadChoices c;
  return c;
}

// Every route of the key timed in rounds: one warm-up call each (primitive creation, first
// touch of scratch), then one call of each unfinished route per round, a route finished
// after 2 calls once it has spent the budget, or after kMaxCalls. The routes take turns, so
// a machine whose speed drifts while they are measured (another process starting, a clock
// changing) slows them alike rather than the one that happened to run then. Each route's
// fastest call counts.
RouteRecord measure(const GemmKey& key, const std::function<void(MatmulRoute)>& probe,
                    const std::function<double()>& clock) {
  struct Timing {
    MatmulRoute route;
    int calls = 0;
    double spent = 0, best = 0;
    bool done() const { return calls >= kMaxCalls || (calls >= 2 && spent >= kBudgetSeconds); }
  };
  std::vector<Timing> timings;
  for (MatmulRoute r : routes_for(key)) {
    probe(r);
    timings.push_back({r});
  }
  for (bool more = true; more;) {
    more = false;
    for (Timing& t : timings) {
      if (t.done()) continue;
      const double t0 = clock();
      probe(t.route);
      const double dt = clock() - t0;
      t.spent += dt;
      t.best = t.calls == 0 ? dt : std::min(t.best, dt);
      ++t.calls;
      more = more || !t.done();
    }
  }
  const double flops = 2.0 * static_cast<double>(key.m) * static_cast<double>(key.n) *
                       static_cast<double>(std::max<std::int64_t>(key.k, 1));
  RouteRecord rec;
  rec.key = key;
  rec.source = RouteSource::measured;
  double best = -1;
  for (const Timing& t : timings) {
    // A call shorter than the clock's tick counts as one tick (empty products are not
    // measured).
    const double rate = flops / std::max(t.best, 1e-9) * 1e-9;
    rec.gflops[static_cast<std::size_t>(t.route)] = rate;
    if (rate > best) {  // ties keep the earlier route in table order
      best = rate;
      rec.route = t.route;
    }
  }
  return rec;
}

MatmulRoute choose_locked(const GemmKey& key, const std::function<void(MatmulRoute)>& probe);

}  // namespace

MatmulRoute choose_route(const GemmKey& key, MatmulRoute preference,
                         const std::function<void(MatmulRoute)>& probe) {
  preference = effective_preference(key.format, preference);
  if (preference != MatmulRoute::automatic) {
    check_route(key.format, preference);
    return preference;
  }
  ThreadChoices& mine = thread_choices();
  const std::uint64_t generation = g_generation.load(std::memory_order_acquire);
  if (mine.generation != generation) {
    mine.routes.clear();
    mine.generation = generation;
  }
  if (auto it = mine.routes.find(key); it != mine.routes.end()) return it->second;
  const MatmulRoute route = choose_locked(key, probe);
  mine.routes.emplace(key, route);
  return route;
}

namespace {

// The record the key already has (s.mu held): this process's choice, else a cached one this
// CPU can run (with `cached` set).
std::optional<RouteRecord> known_locked(Selector& s, const GemmKey& key, bool& cached) {
  cached = false;
  if (auto it = s.table.find(key); it != s.table.end()) return it->second;
  std::optional<RouteRecord> hit = s.cache.find(key);
  if (!hit || !route_unavailable(hit->route, key).empty()) return std::nullopt;
  cached = true;
  return hit;
}

MatmulRoute choose_locked(const GemmKey& key, const std::function<void(MatmulRoute)>& probe) {
  Selector& s = selector();
  std::lock_guard<std::mutex> lock(s.mu);
  bool cached = false;
  if (const std::optional<RouteRecord> known = known_locked(s, key, cached)) {
    if (cached) s.table[key] = *known;
    return known->route;
  }
  RouteRecord rec = measure(key, probe, s.clock);
  // Another process may have measured the same key meanwhile: the first record stays, so
  // that every process on this machine takes the same route, unless this CPU cannot run it
  // (a cache shared with another machine of the same model, MANTISSA_AMX=off, a forged
  // line): then this process keeps its own measurement.
  const RouteRecord first = s.cache.add(rec);
  if (route_unavailable(first.route, key).empty()) rec = first;
  s.table[key] = rec;
  return rec.route;
}

}  // namespace

std::optional<MatmulRoute> known_route(const GemmKey& key, MatmulRoute preference) {
  preference = effective_preference(key.format, preference);
  if (preference != MatmulRoute::automatic) return preference;
  Selector& s = selector();
  std::lock_guard<std::mutex> lock(s.mu);
  bool cached = false;
  const std::optional<RouteRecord> known = known_locked(s, key, cached);
  if (!known) return std::nullopt;
  return known->route;
}

std::vector<RouteRecord> route_records() {
  Selector& s = selector();
  std::lock_guard<std::mutex> lock(s.mu);
  std::vector<RouteRecord> out;
  out.reserve(s.table.size());
  for (const auto& [key, rec] : s.table) out.push_back(rec);
  return out;
}

std::vector<RouteRecord> pin_routes(const std::vector<RouteRecord>& records) {
  Selector& s = selector();
  std::lock_guard<std::mutex> lock(s.mu);
  std::vector<RouteRecord> refused;
  for (RouteRecord rec : records) {
    if (rec.route == MatmulRoute::automatic || !route_unavailable(rec.route, rec.key).empty()) {
      refused.push_back(rec);
      continue;
    }
    rec.source = RouteSource::pinned;
    s.table[rec.key] = rec;
  }
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  return refused;
}

void clear_routes() {
  Selector& s = selector();
  std::lock_guard<std::mutex> lock(s.mu);
  s.table.clear();
  g_generation.fetch_add(1, std::memory_order_acq_rel);
}

void set_route_clock(std::function<double()> clock) {
  Selector& s = selector();
  std::lock_guard<std::mutex> lock(s.mu);
  s.clock = clock ? std::move(clock) : std::function<double()>(steady_seconds);
}

RouteCacheStatus route_cache_status() {
  Selector& s = selector();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.cache.status();
}

std::string forget_cached_routes() {
  Selector& s = selector();
  std::lock_guard<std::mutex> lock(s.mu);
  s.table.clear();
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  return s.cache.forget();
}

void reload_route_cache() {
  Selector& s = selector();
  std::lock_guard<std::mutex> lock(s.mu);
  s.table.clear();
  s.cache = RouteCache(default_route_cache_path());
  g_generation.fetch_add(1, std::memory_order_acq_rel);
}

void set_route_cache_path(const std::string& path) {
  Selector& s = selector();
  std::lock_guard<std::mutex> lock(s.mu);
  s.table.clear();
  s.cache = RouteCache(path);
  g_generation.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace mantissa::kernels
