// The `mantissa` command-line program: parses arguments and hands off to the library.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "commands.hpp"
#include "mantissa/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"mantissa: mixed-precision neural-network training on CPUs"};
  app.require_subcommand(1);
  std::vector<mantissa::app::Action> actions;
  actions.push_back(mantissa::app::register_train_command(app));
  actions.push_back(mantissa::app::register_eval_command(app));
  actions.push_back(mantissa::app::register_generate_command(app));
  actions.push_back(mantissa::app::register_inspect_command(app));
  actions.push_back(mantissa::app::register_formats_command(app));
  actions.push_back(mantissa::app::register_bench_command(app));
  actions.push_back(mantissa::app::register_compare_command(app));
  actions.push_back(mantissa::app::register_report_command(app));
  // CLI11 reports an unknown command as a missing one; name it instead.
  std::string known;
  bool found = false;
  for (const CLI::App* sub : app.get_subcommands({})) {
    known += (known.empty() ? "" : ", ") + sub->get_name();
    found = found || (argc > 1 && sub->get_name() == argv[1]);
  }
  if (argc > 1 && argv[1][0] != '-' && !found) {
    fmt::print(stderr, "mantissa: error: unknown command '{}' (expected one of: {})\n", argv[1],
               known);
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help("", CLI::AppFormatMode::All));
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    fmt::print("{}", app.help("", CLI::AppFormatMode::All));
    return 0;
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "mantissa: error: {}\n", e.what());
    return 2;
  }
  try {
    for (const auto& action : actions) {
      const int rc = action();
      if (rc >= 0) return rc;
    }
  } catch (const mantissa::Error& e) {
    fmt::print(stderr, "mantissa: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // I/O and system failures
    fmt::print(stderr, "mantissa: failed: {}\n", e.what());
    return 1;
  }
  return 0;
}
