// trainer.init.dist: the data-parallel settings, read once into DistConfig.
#include <cmath>
#include <sstream>

#include "config_internal.hpp"

namespace mantissa::config {

std::int64_t DistConfig::bucket_cap_bytes() const {
  return std::max<std::int64_t>(4, std::llround(bucket_cap_mb * 1024.0 * 1024.0));
}

namespace detail {
namespace {

// A number in (0, max] at `key` (fallback when absent); else an Error naming the key.
double positive_up_to(Reader& r, const std::string& key, double fallback, double max,
                      const char* unit) {
  const double v = r.get<double>(key, fallback, "a number");
  if (!(v > 0 && v <= max)) {
    std::ostringstream m;
    m << r.key_path(key) << ": " << v << " must be in (0, " << max << "] (" << unit << ")";
    throw Error(m.str());
  }
  return v;
}

}  // namespace

DistConfig parse_dist(Reader r) {
  DistConfig d;
  d.allreduce_dtype = r.get_named("allreduce_dtype", d.allreduce_dtype, dist::kWireFormatNames);
  d.bucket_cap_mb = positive_up_to(r, "bucket_cap_mb", d.bucket_cap_mb, 65536, "MiB");
  d.timeout_seconds = positive_up_to(r, "timeout_seconds", d.timeout_seconds, 86400, "seconds");
  d.overlap = r.get<bool>("overlap", d.overlap, "true or false");
  r.finish();
  return d;
}

}  // namespace detail
}  // namespace mantissa::config
