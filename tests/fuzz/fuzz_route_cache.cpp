// libFuzzer harness: the machine's route cache file (kernels/route_cache.cpp), as a process
// reads it. The input is written as the cache file of a directory of this process's own
// (/tmp/mantissa-fuzz-routes-<pid>), which the route selector then takes as its cache (as a
// new process would); every line that parses (kernels::parse_route_record_line) is looked up
// through kernels::known_route, the way a product asks for its route. Every input must end in
// a result or a mantissa::Error; anything else (a crash, a sanitizer report, another
// exception) is a finding, and so is a route this CPU cannot run handed back for a product
// (route_unavailable), a line that does not read back as the same product and route once
// written (route_record_line), or more cache entries than lines.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "mantissa/error.hpp"
#include "mantissa/kernels/gemm_route.hpp"

namespace {

namespace k = mantissa::kernels;

// This process's cache directory, removed when the process ends.
struct CacheDir {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("mantissa-fuzz-routes-" + std::to_string(::getpid())))
                         .string();
  ~CacheDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};
const std::string& cache_dir() {
  static const CacheDir dir;
  return dir.path;
}

void check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    std::filesystem::create_directories(cache_dir());
    k::set_route_cache_path(cache_dir());
    const std::string path = k::route_cache_status().path;
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
    }
    k::set_route_cache_path(cache_dir());  // a new process: nothing read yet
    std::istringstream lines(text);
    std::string line;
    int read = 0;
    std::vector<k::RouteRecord> records;
    while (std::getline(lines, line)) {
      ++read;
      const std::optional<k::RouteRecord> rec = k::parse_route_record_line(line);
      if (!rec) continue;
      const std::optional<k::RouteRecord> back =
          k::parse_route_record_line(k::route_record_line(*rec));
      check(back && back->key == rec->key && back->route == rec->route);
      const std::optional<mantissa::precision::MatmulRoute> taken =
          k::known_route(rec->key, mantissa::precision::MatmulRoute::automatic);
      check(!taken || k::route_unavailable(*taken, rec->key).empty());
      records.push_back(*rec);
    }
    check(k::route_cache_status().entries <= read);
    (void)k::route_table_text(records);
  } catch (const mantissa::Error&) {
  }
  return 0;
}
