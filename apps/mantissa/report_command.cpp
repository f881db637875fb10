// `mantissa report`: the precision report of existing runs.
#include <cstdio>

#include "commands.hpp"
#include "report_output.hpp"

namespace mantissa::app {

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
    report::ReportOptions options;
    if (!a->title.empty()) options.title = a->title;
    write_report(a->run_dirs, a->out, options);
    std::printf("report: %s\n", a->out.c_str());
    return 0;
  };
}

}  // namespace mantissa::app
