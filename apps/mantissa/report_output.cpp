// Writing the precision report of run directories to an HTML file (report_output.hpp).
#include "report_output.hpp"

#include <filesystem>
#include <fstream>
#include <string_view>

#include "mantissa/error.hpp"
#include "mantissa/report/metrics.hpp"
#include "mantissa/train/checkpoint.hpp"
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

// What --out may replace: nothing, or an earlier report (a page that begins as every page
// render_report draws does). A checkpoint, metrics or any other file of another run, and
// the names a run's own files take, are refused: the page would destroy it or be taken for it.
void check_out_replaces_only_a_report(const std::string& out) {
  namespace fs = std::filesystem;
  const std::string name = fs::path(out).filename().string();
  if (name == "metrics.jsonl" || name == ".lock" || name == "throughput.jsonl" ||
      train::step_in_checkpoint_name(name) ||
      (name.ends_with(".tmp") && train::step_in_checkpoint_name(name.substr(0, name.size() - 4)))) {
    throw Error(out +
                ": is a name a run directory's own files take; --out names the report's "
                "HTML file (e.g. report.html)");
  }
  std::ifstream in(out, std::ios::binary);
  if (!in) return;  // absent: a new file
  constexpr std::string_view kPageStart = "<!DOCTYPE html>";
  std::string head(kPageStart.size(), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  if (head != kPageStart) {
    throw Error(out + ": exists and is not a report (it does not begin '" +
                std::string(kPageStart) +
                "'); --out replaces only an earlier report (name a new file, or move this one)");
  }
}

}  // namespace

void check_report_out(const std::string& out, const std::vector<std::string>& run_dirs) {
  if (std::filesystem::path(out).filename().empty()) {
    throw Error(out + ": names a directory; --out names the report's HTML file (e.g. " +
                (std::filesystem::path(out) / "report.html").string() + ")");
  }
  check_not_a_run_file(out, run_dirs);
  require_regular_or_absent(out, "the report");
  check_out_replaces_only_a_report(out);
}

void write_report(const std::vector<std::string>& run_dirs, const std::string& out,
                  const report::ReportOptions& options) {
  check_report_out(out, run_dirs);
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
