#pragma once
// Internal: the machine's route cache (gemm_route.hpp). A text file of measured route
// choices, one line per product class, in a file named after the CPU and this library's
// version, so that later processes on the same machine take the same routes. Lines that do
// not parse are skipped (and counted in the status note); a file that cannot be read or
// written turns the cache off for this process with a note, never an error: the routes are
// then measured again.
#include <map>
#include <optional>
#include <string>

#include "mantissa/kernels/gemm_route.hpp"

namespace mantissa::kernels {

struct RouteCacheLocation {
  std::string path;  // "" when off
  std::string note;  // why it is off
};
// $MANTISSA_ROUTE_CACHE (a directory; "off" disables), else $XDG_CACHE_HOME/mantissa, else
// $HOME/.cache/mantissa; the file inside is routes-<hash of CPU and version>.txt.
RouteCacheLocation default_route_cache_path();

class RouteCache {
 public:
  explicit RouteCache(RouteCacheLocation where);
  explicit RouteCache(const std::string& dir);  // a directory; "" = off

  // The cached record for the key (source cached), reading the file on first use.
  std::optional<RouteRecord> find(const GemmKey& key);
  // Adds a measured record; returns the record that counts: an earlier one for the same key
  // written by another process meanwhile, else `rec`.
  RouteRecord add(const RouteRecord& rec);
  RouteCacheStatus status() const;
  // Removes the file (under the lock) and forgets its entries; returns the path removed.
  std::string forget();

 private:
  void load();  // (re)reads the file into entries_
  void turn_off(const std::string& why);

  std::string path_, note_;
  bool loaded_ = false;
  std::map<GemmKey, RouteRecord> entries_;
};

}  // namespace mantissa::kernels
