// Writing the precision report of run directories to an HTML file (report_output.hpp).
#include "report_output.hpp"

#include <filesystem>

#include "mantissa/error.hpp"
#include "mantissa/report/metrics.hpp"
#include "mantissa/write_file.hpp"

namespace mantissa::app {
namespace {

// --out may not name a file a run directory holds (its metrics, lock, checkpoints): the
// report would replace the run's own record. An HTML file there (an earlier report) may be
// replaced.
void check_not_a_run_file(const std::string& out, const std::vector<std::string>& run_dirs) {
  namespace fs = std::filesystem;
  const fs::path path(out);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec)) || path.extension() == ".html") return;
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  for (const std::string& dir : run_dirs) {
    if (fs::equivalent(parent, dir, ec) && !ec) {
      throw Error(out + ": is a file of the run directory " + dir +
                  "; --out never replaces a run's own files (name a new file, e.g. " +
                  (fs::path(dir) / "report.html").string() + ")");
    }
  }
}

}  // namespace

void write_report(const std::vector<std::string>& run_dirs, const std::string& out,
                  const report::ReportOptions& options) {
  check_not_a_run_file(out, run_dirs);
  require_regular_or_absent(out, "the report");
  std::vector<report::RunLog> logs;
  for (const std::string& dir : run_dirs) logs.push_back(report::read_run_log(dir));
  const std::string page = report::render_report(logs, options);
  namespace fs = std::filesystem;
  const fs::path path(out);
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  replace_file(out, page, "the report");
}

}  // namespace mantissa::app
