// `mantissa report`: the precision report of existing runs.
#include <cstdio>
#include <filesystem>

#include "commands.hpp"
#include "mantissa/error.hpp"
#include "mantissa/train/metrics.hpp"
#include "mantissa/write_file.hpp"
#include "report_output.hpp"

namespace mantissa::app {

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

void write_report(const std::vector<std::string>& run_dirs, const std::string& out,
                  const train::ReportOptions& options) {
  check_not_a_run_file(out, run_dirs);
  require_regular_or_absent(out, "the report");
  std::vector<train::RunLog> logs;
  for (const std::string& dir : run_dirs) logs.push_back(train::read_run_log(dir));
  const std::string page = train::render_report(logs, options);
  namespace fs = std::filesystem;
  const fs::path path(out);
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  replace_file(out, page, "the report");
}

namespace {

struct ReportArgs {
  std::vector<std::string> run_dirs;
  std::string out = "report.html";
  std::string title;
};

}  // namespace

Action register_report_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "report", "Draw the precision report (one HTML file) of existing run directories");
  auto a = std::make_shared<ReportArgs>();
  cmd->add_option("run_dirs", a->run_dirs, "Run directories (each holds a metrics.jsonl)")
      ->required();
  cmd->add_option("--out", a->out, "The HTML file to write (default report.html)");
  cmd->add_option("--title", a->title, "The page's title (default: mantissa precision report)");
  return [cmd, a]() -> int {
    if (!cmd->parsed()) return -1;
    train::ReportOptions options;
    if (!a->title.empty()) options.title = a->title;
    write_report(a->run_dirs, a->out, options);
    std::printf("report: %s\n", a->out.c_str());
    return 0;
  };
}

}  // namespace mantissa::app
