// `mantissa report`: the precision report of existing runs.
#include <cstdio>

#include "commands.hpp"
#include "mantissa/error.hpp"
#include "mantissa/report/metrics.hpp"
#include "report_output.hpp"

namespace mantissa::app {

namespace {

struct ReportArgs {
  std::vector<std::string> run_dirs;
  std::string out = "report.html";
  std::string title, throughput;
  bool group_seeds = false;
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
  cmd->add_option("--throughput", a->throughput,
                  "Throughput measured interleaved (the throughput.jsonl mantissa compare "
                  "writes): the only throughput the report compares across runs");
  cmd->add_flag("--group-seeds", a->group_seeds,
                "Draw runs of one job that differ only in their seed as one: their mean and "
                "range, and mean +- standard deviation in the tables");
  return [cmd, a]() -> int {
    if (!cmd->parsed()) return -1;
    if (a->out == "-") {  // many tools' word for standard output; here a file named "-"
      throw Error("--out -: the report is written to a file (give its name, e.g. report.html)");
    }
    report::ReportOptions options;
    if (!a->title.empty()) options.title = a->title;
    if (!a->throughput.empty()) options.throughput = report::read_throughput(a->throughput);
    options.group_seeds = a->group_seeds;
    write_report(a->run_dirs, a->out, options);
    std::printf("report: %s\n", a->out.c_str());
    return 0;
  };
}

}  // namespace mantissa::app
