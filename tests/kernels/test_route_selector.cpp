// Routes chosen by measurement (kernels/gemm_route.hpp), with an injected clock: the fastest
// route by the fake clock is chosen and recorded with its rates, once per key; named routes
// are never measured; the machine cache gives later processes the same choice; pinned routes
// (a checkpoint's) win over cache and measurement; bad cache lines are skipped.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "mantissa/kernels/gemm_route.hpp"

namespace mantissa::kernels {
namespace {

// A fresh selector (no choices, cache in a temporary directory) and a fake clock whose
// probe of route r takes seconds_[r].
class RouteSelectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("mantissa-routes-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    set_route_cache_path(dir_.string());
    set_route_clock([this] { return now_; });
  }
  void TearDown() override {
    set_route_clock({});
    set_route_cache_path("");
    std::filesystem::remove_all(dir_);
  }
  std::function<void(MatmulRoute)> probe() {
    return [this](MatmulRoute r) {
      ++calls_[r];
      now_ += seconds_.at(r);
    };
  }
  // Every route this CPU can run for bfloat16, each slower than the one given as fastest.
  void make_fastest(MatmulRoute fastest) {
    double t = 0.010;
    for (MatmulRoute r : routes_for(Format::bfloat16)) seconds_[r] = (t += 0.001);
    seconds_[fastest] = 0.001;
  }

  std::filesystem::path dir_;
  double now_ = 100.0;
  std::map<MatmulRoute, double> seconds_;
  std::map<MatmulRoute, int> calls_;
  const GemmKey key_{256, 512, 128, false, true, Format::bfloat16, 1, true};
};

TEST_F(RouteSelectorTest, TheFastestRouteByTheClockIsChosenAndRecordedOnce) {
  const std::vector<MatmulRoute> routes = routes_for(Format::bfloat16);
  ASSERT_GE(routes.size(), 2u);  // fp32 and onednn_fp32 everywhere
  for (MatmulRoute fastest : routes) {
    clear_routes();
    set_route_cache_path("");
    calls_.clear();
    make_fastest(fastest);
    EXPECT_EQ(choose_route(key_, MatmulRoute::automatic, probe()), fastest);
    // Each route: one warm-up, then calls until 2 ms have passed (2 at least): every route
    // here takes at least 1 ms a call.
    for (MatmulRoute r : routes) EXPECT_EQ(calls_[r], 1 + 2) << route_name(r);
    const std::vector<RouteRecord> recs = route_records();
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0].key, key_);
    EXPECT_EQ(recs[0].route, fastest);
    EXPECT_EQ(recs[0].source, RouteSource::measured);
    const double flops = 2.0 * 256 * 512 * 128;
    for (MatmulRoute r : routes) {
      const double want = flops / seconds_[r] * 1e-9;
      EXPECT_NEAR(recs[0].gflops[static_cast<std::size_t>(r)], want, want * 1e-9);
    }
    EXPECT_EQ(recs[0].gflops[static_cast<std::size_t>(MatmulRoute::automatic)], 0.0);
    // Known now: no second measurement.
    calls_.clear();
    EXPECT_EQ(choose_route(key_, MatmulRoute::automatic, probe()), fastest);
    EXPECT_TRUE(calls_.empty());
  }
}

TEST_F(RouteSelectorTest, QuickRoutesAreTimedForTwoMillisecondsAtMostTwentyCalls) {
  make_fastest(MatmulRoute::onednn_fp32);
  seconds_[MatmulRoute::onednn_fp32] = 0.0008;  // 3 calls make 2.4 ms
  seconds_[MatmulRoute::fp32] = 0.00001;        // 20 calls make 0.2 ms: stops at 20
  choose_route(key_, MatmulRoute::automatic, probe());
  EXPECT_EQ(calls_[MatmulRoute::onednn_fp32], 1 + 3);
  EXPECT_EQ(calls_[MatmulRoute::fp32], 1 + 20);
  EXPECT_EQ(route_records().at(0).route, MatmulRoute::fp32);
}

TEST_F(RouteSelectorTest, RoutesTakeTurnsSoThatADriftingMachineSlowsThemAlike) {
  // The last route in table order is the fastest (1 ms a call, the others 1.5 ms); after the
  // warm-ups and two rounds the machine gets 3x slower for good. Timed one route after
  // another, the last would see only the slow machine (3 ms) and lose; timed in turns, each
  // route's two calls of the first rounds ran on the fast one.
  const std::vector<MatmulRoute> routes = routes_for(Format::bfloat16);
  ASSERT_GE(routes.size(), 2u);
  for (MatmulRoute r : routes) seconds_[r] = 0.0015;
  seconds_[routes.back()] = 0.001;
  std::vector<MatmulRoute> order;
  const auto drifting = [&](MatmulRoute r) {
    order.push_back(r);
    const bool slow = order.size() > 3 * routes.size();
    now_ += seconds_.at(r) * (slow ? 3.0 : 1.0);
  };
  EXPECT_EQ(choose_route(key_, MatmulRoute::automatic, drifting), routes.back());
  // The order: every warm-up, then rounds of every route still timing.
  ASSERT_GE(order.size(), 3 * routes.size());
  for (std::size_t i = 0; i < 3 * routes.size(); ++i) {
    EXPECT_EQ(order[i], routes[i % routes.size()]) << "call " << i;
  }
}

TEST_F(RouteSelectorTest, NamedRoutesAreTakenWithoutMeasuring) {
  make_fastest(MatmulRoute::onednn_fp32);
  EXPECT_EQ(choose_route(key_, MatmulRoute::fp32, probe()), MatmulRoute::fp32);
  EXPECT_TRUE(calls_.empty());
  EXPECT_TRUE(route_records().empty());
  // A bf16 route asked for float32 products: they choose among the fp32 routes.
  GemmKey f32 = key_;
  f32.format = Format::float32;
  EXPECT_EQ(choose_route(f32, MatmulRoute::bf16, probe()), MatmulRoute::onednn_fp32);
  EXPECT_EQ(calls_.count(MatmulRoute::bf16), 0u);
}

TEST_F(RouteSelectorTest, TheMachineCacheGivesALaterProcessTheSameChoice) {
  make_fastest(MatmulRoute::onednn_fp32);
  EXPECT_EQ(choose_route(key_, MatmulRoute::automatic, probe()), MatmulRoute::onednn_fp32);
  EXPECT_EQ(route_cache_status().path.rfind(dir_.string(), 0), 0u);
  // A new process: nothing in memory, the same cache directory, another clock.
  set_route_cache_path(dir_.string());
  make_fastest(MatmulRoute::fp32);
  calls_.clear();
  EXPECT_EQ(choose_route(key_, MatmulRoute::automatic, probe()), MatmulRoute::onednn_fp32);
  EXPECT_TRUE(calls_.empty());
  EXPECT_EQ(route_records().at(0).source, RouteSource::cached);
  // Another key is measured, and added to the same file.
  GemmKey other = key_;
  other.k = 64;
  EXPECT_EQ(choose_route(other, MatmulRoute::automatic, probe()), MatmulRoute::fp32);
  set_route_cache_path(dir_.string());
  calls_.clear();
  EXPECT_EQ(choose_route(other, MatmulRoute::automatic, probe()), MatmulRoute::fp32);
  EXPECT_TRUE(calls_.empty());
}

// Rates measured with other fp32 micro-kernels (bench train --gemm-isa) keep a file of their
// own: a run with the best kernels never takes their choices, nor they its.
TEST_F(RouteSelectorTest, OtherGemmKernelsKeepACacheFileOfTheirOwn) {
  const GemmIsa best = best_gemm_isa();
  if (best == GemmIsa::scalar) GTEST_SKIP() << "skip: this CPU runs only the scalar kernels";
  const std::string ours = route_cache_status().path;
  set_gemm_isa(GemmIsa::scalar);
  set_route_cache_path(dir_.string());
  const std::string scalar = route_cache_status().path;
  set_gemm_isa(best);
  set_route_cache_path(dir_.string());
  EXPECT_NE(scalar, ours);
  EXPECT_EQ(route_cache_status().path, ours);
  EXPECT_EQ(std::filesystem::path(scalar).parent_path(), dir_);
}

TEST_F(RouteSelectorTest, PinnedRoutesWinAndRoutesThisCpuLacksAreRefused) {
  make_fastest(MatmulRoute::onednn_fp32);
  RouteRecord pinned;
  pinned.key = key_;
  pinned.route = MatmulRoute::fp32;
  RouteRecord impossible = pinned;
  impossible.key.format = Format::float32;
  impossible.route = MatmulRoute::bf16;  // float32 values are not bf16 values: never runs
  const std::vector<RouteRecord> refused = pin_routes({pinned, impossible});
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].key, impossible.key);
  EXPECT_EQ(choose_route(key_, MatmulRoute::automatic, probe()), MatmulRoute::fp32);
  EXPECT_TRUE(calls_.empty());
  EXPECT_EQ(route_records().at(0).source, RouteSource::pinned);
}

TEST_F(RouteSelectorTest, KnownRoutesAreTheNamedTheChosenTheCachedAndThePinnedOnly) {
  make_fastest(MatmulRoute::onednn_fp32);
  // Nothing chosen, nothing cached: unknown under automatic, and asking measures nothing.
  EXPECT_EQ(known_route(key_, MatmulRoute::automatic), std::nullopt);
  EXPECT_EQ(known_route(key_, MatmulRoute::fp32), MatmulRoute::fp32);
  EXPECT_TRUE(calls_.empty());
  EXPECT_TRUE(route_records().empty());
  // Chosen by measurement: known.
  EXPECT_EQ(choose_route(key_, MatmulRoute::automatic, probe()), MatmulRoute::onednn_fp32);
  EXPECT_EQ(known_route(key_, MatmulRoute::automatic), MatmulRoute::onednn_fp32);
  // A later process with the same cache knows it before its first product.
  set_route_cache_path(dir_.string());
  EXPECT_EQ(known_route(key_, MatmulRoute::automatic), MatmulRoute::onednn_fp32);
  EXPECT_TRUE(route_records().empty());  // known, not yet taken
  // Pinned (a checkpoint's choice) wins over the cache.
  RouteRecord pinned;
  pinned.key = key_;
  pinned.route = MatmulRoute::fp32;
  ASSERT_TRUE(pin_routes({pinned}).empty());
  EXPECT_EQ(known_route(key_, MatmulRoute::automatic), MatmulRoute::fp32);
  // A bf16 route named does not hold for float32 products (effective_preference): they choose
  // as under automatic, and none has been chosen.
  GemmKey f32 = key_;
  f32.format = Format::float32;
  EXPECT_EQ(known_route(f32, MatmulRoute::onednn_fp32), MatmulRoute::onednn_fp32);
  EXPECT_EQ(known_route(f32, MatmulRoute::bf16), std::nullopt);
}

TEST_F(RouteSelectorTest, RecordLinesRoundTripAndBadLinesAreRejected) {
  RouteRecord r;
  r.key = {2048, 1536, 384, true, false, Format::cbfloat16, 3, false};
  r.route = MatmulRoute::onednn_fp32;
  r.gflops[1] = 95.5;
  r.gflops[2] = 101.25;
  const std::optional<RouteRecord> back = parse_route_record_line(route_record_line(r));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->key, r.key);
  EXPECT_EQ(back->route, r.route);
  EXPECT_EQ(back->gflops, r.gflops);
  // An attention head's class: t x t x d, NT, token "head" (written by hand here).
  RouteRecord head;
  head.key = {256, 256, 64, false, true, Format::bfloat16, 1, false};
  head.key.attention_head = true;
  head.route = MatmulRoute::bf16;
  EXPECT_EQ(route_record_line(head).substr(0, 34), "256 256 64 NT bfloat16 1 head bf16");
  const std::optional<RouteRecord> head_back =
      parse_route_record_line("256 256 64 NT bfloat16 1 head bf16 0 0 0 0 0");
  ASSERT_TRUE(head_back);
  EXPECT_EQ(head_back->key, head.key);
  EXPECT_EQ(describe(head.key), "attention head t256 d64 bfloat16 1 pass");
  // A line written before the amx route existed (one rate fewer) still reads: amx unmeasured.
  const std::optional<RouteRecord> old_line =
      parse_route_record_line("2048 1536 384 TN cbfloat16 3 thread onednn_fp32 0 1.5 95.5 0 7");
  ASSERT_TRUE(old_line);
  EXPECT_EQ(old_line->gflops[static_cast<std::size_t>(MatmulRoute::onednn_fp32)], 95.5);
  EXPECT_EQ(old_line->gflops[static_cast<std::size_t>(MatmulRoute::onednn_bf16)], 7.0);
  EXPECT_EQ(old_line->gflops[static_cast<std::size_t>(MatmulRoute::amx)], 0.0);
  for (const char* bad :
       {"", "1 2 3 NT bfloat16 1 all", "1 2 3 XX bfloat16 1 all fp32 0 0 0 0 0",
        "1 2 3 NT fp99 1 all fp32 0 0 0 0 0", "1 2 3 NT bfloat16 2 all fp32 0 0 0 0 0",
        "1 2 3 NT bfloat16 1 some fp32 0 0 0 0 0", "1 2 3 NT bfloat16 1 all automatic 0 0 0 0 0",
        "-1 2 3 NT bfloat16 1 all fp32 0 0 0 0 0", "1 2 3 NT bfloat16 1 all fp32 0 0 0 0 -1",
        "1 2 3 NT bfloat16 1 all fp32 0 0 0 0 nan", "1 2 3 NT bfloat16 1 all fp32 0 0 0 0 0 0 9",
        "1 2 3 NT bfloat16 1 all fp32 0 1e300 0 0 0 0",  // 10^309 FLOP/s: no measurement
        "1 2 3 NT bfloat16 1 all fp32 0 1000000001 0 0 0 0", "1 2 3 NT bfloat16 1 all fp32 0 0 0 0",
        "1 2 3 NT bfloat16 1 all fp32 0 0 0 0 x",
        "99999999999999999999 2 3 NT bfloat16 1 all fp32 0 0 0 0 0",
        "256 128 64 NT bfloat16 1 head bf16 0 0 0 0 0",  // a head's scores are square
        "256 256 64 NN bfloat16 1 head bf16 0 0 0 0 0"}) {
    EXPECT_FALSE(parse_route_record_line(bad)) << bad;
  }
}

// Whether float16 products multiply in float32 (where POL 0 and 1 compute the same bits):
// before any product, by the route named or every route automatic may choose here; after,
// by the routes the products of that format took (others do not count).
TEST_F(RouteSelectorTest, Fp32RoutesAreKnownByNameOrByTheRecords) {
  EXPECT_TRUE(takes_fp32_routes(Format::float16, MatmulRoute::fp32));
  EXPECT_TRUE(takes_fp32_routes(Format::float16, MatmulRoute::onednn_fp32));
  const std::vector<MatmulRoute> here = routes_for(Format::float16);
  const bool bf16_here = std::any_of(here.begin(), here.end(), [](MatmulRoute r) {
    return r == MatmulRoute::bf16 || r == MatmulRoute::onednn_bf16 || r == MatmulRoute::amx;
  });
  EXPECT_EQ(takes_fp32_routes(Format::float16, MatmulRoute::automatic), !bf16_here);
  if (bf16_here) {
    EXPECT_FALSE(takes_fp32_routes(Format::float16, MatmulRoute::bf16));
  }
  // A bf16 route named for float32 products applies to nothing: they choose among fp32 ones.
  EXPECT_TRUE(takes_fp32_routes(Format::float32, MatmulRoute::bf16));
  RouteRecord f16{{64, 64, 64, false, false, Format::float16, 3, true}, MatmulRoute::fp32, {}, {}};
  RouteRecord other = f16;
  other.key.format = Format::bfloat16;
  other.route = MatmulRoute::bf16;
  EXPECT_FALSE(took_fp32_routes(Format::float16, {})) << "nothing routed: nothing known";
  EXPECT_TRUE(took_fp32_routes(Format::float16, {f16, other}));
  f16.route = MatmulRoute::onednn_fp32;
  EXPECT_TRUE(took_fp32_routes(Format::float16, {f16, other}));
  f16.route = MatmulRoute::onednn_bf16;
  EXPECT_FALSE(took_fp32_routes(Format::float16, {f16, other}));
}

TEST_F(RouteSelectorTest, ForgettingTheCacheMeasuresAgain) {
  make_fastest(MatmulRoute::onednn_fp32);
  choose_route(key_, MatmulRoute::automatic, probe());
  const std::string path = route_cache_status().path;
  EXPECT_EQ(forget_cached_routes(), path);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(route_records().empty());
  make_fastest(MatmulRoute::fp32);
  calls_.clear();
  EXPECT_EQ(choose_route(key_, MatmulRoute::automatic, probe()), MatmulRoute::fp32);
  EXPECT_FALSE(calls_.empty());
  EXPECT_EQ(forget_cached_routes(), path);
  EXPECT_EQ(forget_cached_routes(), "");  // nothing left to forget
}

// The audit of 2026-11-28: a cached record this CPU cannot run (here bf16 for float32 values;
// on a machine without AMX, an amx line from one with it) was dropped when read, but the
// record the cache handed back after the fresh measurement was run: an illegal instruction.
TEST_F(RouteSelectorTest, ACachedRouteThisCpuCannotRunIsNeverTaken) {
  make_fastest(MatmulRoute::onednn_fp32);
  GemmKey other = key_;
  other.k = 64;
  choose_route(other, MatmulRoute::automatic, probe());  // the file exists, with its header
  const std::string path = route_cache_status().path;
  RouteRecord forged;
  forged.key = key_;
  forged.key.format = Format::float32;
  forged.route = MatmulRoute::bf16;
  {
    std::ofstream out(path, std::ios::app);
    out << route_record_line(forged) << "\n";
  }
  set_route_cache_path(dir_.string());  // a new process
  calls_.clear();
  EXPECT_EQ(choose_route(forged.key, MatmulRoute::automatic, probe()), MatmulRoute::onednn_fp32);
  EXPECT_FALSE(calls_.empty());  // measured, not taken from the file
  EXPECT_EQ(route_records().at(0).route, MatmulRoute::onednn_fp32);
}

// A holder of the cache's lock that never lets go (a process stopped while it appends) once
// stalled training forever: the wait is bounded, the shape measured and not recorded.
TEST_F(RouteSelectorTest, AHeldCacheLockDelaysButDoesNotStopTheChoice) {
  make_fastest(MatmulRoute::onednn_fp32);
  GemmKey other = key_;
  other.k = 64;
  choose_route(other, MatmulRoute::automatic, probe());  // the file and its lock exist
  const std::string path = route_cache_status().path;
  const int holder = ::open((path + ".lock").c_str(), O_RDWR);
  ASSERT_GE(holder, 0);
  ASSERT_EQ(::flock(holder, LOCK_EX), 0);  // another open file: the cache's flock waits on it
  EXPECT_EQ(choose_route(key_, MatmulRoute::automatic, probe()), MatmulRoute::onednn_fp32);
  EXPECT_NE(route_cache_status().note.find("not recorded"), std::string::npos)
      << route_cache_status().note;
  ::close(holder);
  set_route_cache_path(dir_.string());  // a new process: the key was not written
  EXPECT_EQ(known_route(key_, MatmulRoute::automatic), std::nullopt);
  EXPECT_EQ(known_route(other, MatmulRoute::automatic), MatmulRoute::onednn_fp32);
}

TEST_F(RouteSelectorTest, MalformedCacheLinesAreSkippedAndCounted) {
  make_fastest(MatmulRoute::onednn_fp32);
  choose_route(key_, MatmulRoute::automatic, probe());
  const std::string path = route_cache_status().path;
  {
    std::ofstream out(path, std::ios::app);
    out << "this is not a route line\n";
  }
  set_route_cache_path(dir_.string());
  calls_.clear();
  EXPECT_EQ(choose_route(key_, MatmulRoute::automatic, probe()), MatmulRoute::onednn_fp32);
  EXPECT_TRUE(calls_.empty());
  EXPECT_NE(route_cache_status().note.find("1 malformed line"), std::string::npos)
      << route_cache_status().note;
}

}  // namespace
}  // namespace mantissa::kernels
