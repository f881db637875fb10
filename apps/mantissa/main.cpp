// The `mantissa` command-line program: parses arguments and hands off to the library. Under
// mpirun (or another MPI launcher) it is one process of a data-parallel job
// (docs/distributed.md): the dist::Runtime starts MPI before anything else, and errors are
// reported so that the job ends as a whole.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "mantissa/dist/runtime.hpp"
#include "mantissa/dist/step_agreement.hpp"
#include "mantissa/error.hpp"
#include "process_setup.hpp"
#include "terminal_text.hpp"

namespace {

// Text to a stream, never an exception: fmt::print throws when the stream cannot be written
// (stderr closed or full), which inside a handler below would end the program by abort.
void say(std::FILE* stream, const std::string& text) {
  std::fputs(text.c_str(), stream);
}

// "standard output: write failed (No space left on device)" when what was printed to stdout
// could not all be written (a full disk behind `> result.txt`); flushes it first. A pipe or
// socket whose reader went away (`| head`) is not a failure: training ignores SIGPIPE so that
// it runs on, and its lost lines change nothing (docs/cli.md).
std::optional<std::string> stdout_write_error() {
  if (std::fflush(stdout) == 0 && std::ferror(stdout) == 0) return std::nullopt;
  const int e = errno;
  struct stat st {};
  if (::fstat(STDOUT_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
    return std::nullopt;
  }
  return "standard output: write failed (" +
         std::string(e != 0 ? std::strerror(e) : "an error on the stream") + ")";
}

// "rank 1 of 2: " in a job of several processes, unless the message names its rank already.
std::string rank_prefix(const mantissa::dist::Communicator& world, const std::string& message) {
  if (world.size() == 1 || message.starts_with("dist: rank")) return "";
  return fmt::format("rank {} of {}: ", world.rank(), world.size());
}

// A usage error in mantissa's words where CLI11's read oddly: a repeated option ("--steps: At
// Most 1 required but received 2") is said as such.
std::string usage_error_text(const CLI::ParseError& e) {
  const std::string what = e.what();
  constexpr std::string_view kRepeated = ": At Most 1 required but received ";
  const std::size_t at = what.find(kRepeated);
  if (at != std::string::npos && at > 0) {
    const std::string count = what.substr(at + kRepeated.size());
    if (!count.empty() && count.find_first_not_of("0123456789") == std::string::npos) {
      return what.substr(0, at) + ": given " + count + " times; it takes one value (give it once)";
    }
  }
  return what;
}

// CLI11 says "A subcommand is required" both of an unknown command word and of a missing one,
// at every level (`mantissa foo`, `mantissa bench foo`, `mantissa bench`): name the word, or
// the command that needs one, with the words it takes. nullopt when the words are right (or
// an option comes first: CLI11 reads options, --help included).
std::optional<std::string> command_word_error(CLI::App& app, int argc, char** argv) {
  CLI::App* at = &app;
  std::string command = "mantissa";
  for (int i = 1;; ++i) {
    std::string known;
    CLI::App* next = nullptr;
    for (CLI::App* sub : at->get_subcommands({})) {
      known += (known.empty() ? "" : ", ") + sub->get_name();
      if (i < argc && sub->get_name() == argv[i]) next = sub;
    }
    if (known.empty()) return std::nullopt;
    if (i >= argc) return command + ": a command is required (one of: " + known + ")";
    if (argv[i][0] == '-') {
      // CLI11 reads options (--help at every level); before the first command word any other
      // (`mantissa --version`) would be answered "A subcommand is required".
      const std::string_view option = argv[i];
      if (at != &app || option == "-h" || option == "--help") return std::nullopt;
      return std::string(option) +
             ": unknown option (mantissa takes a command first, one of: " + known + ")";
    }
    if (next == nullptr) {
      const std::string word =
          at == &app ? std::string(argv[i]) : command.substr(9) + " " + argv[i];
      return "unknown command '" + word + "' (expected one of: " + known + ")";
    }
    command += " " + next->get_name();
    at = next;
  }
}

// A command's status, unless what it printed to stdout was lost: then a failed write (2).
int finish(int rc) {
  if (const std::optional<std::string> lost = stdout_write_error()) {
    say(stderr, "mantissa: error: " + *lost + "\n");
    return rc == 0 ? mantissa::app::kExitError : rc;
  }
  return rc;
}

int run(int argc, char** argv, mantissa::dist::Runtime& runtime) {
  const mantissa::dist::Communicator& world = runtime.world();
  // Output every process would print alike (help, usage errors) comes from rank 0 only.
  const bool root = world.is_root();
  CLI::App app{"mantissa: mixed-precision neural-network training on CPUs"};
  app.require_subcommand(1);
  std::vector<mantissa::app::Action> actions;
  actions.push_back(mantissa::app::register_train_command(app, world));
  actions.push_back(mantissa::app::register_eval_command(app, world));
  actions.push_back(mantissa::app::register_generate_command(app));
  actions.push_back(mantissa::app::register_inspect_command(app));
  actions.push_back(mantissa::app::register_formats_command(app));
  actions.push_back(mantissa::app::register_bench_command(app, world));
  actions.push_back(mantissa::app::register_compare_command(app));
  actions.push_back(mantissa::app::register_report_command(app));
  // No argument may be empty: `--mode ""` or `--value ""` is a mistake (an unset shell
  // variable), never a request for the default (CLI11 would pass it on as a value). The one
  // exception: generate's `--prompt ""` (start from nothing) is a real request.
  // `--mode=` (`--mode=$UNSET`) is the same mistake: CLI11 would take the next argument as
  // its value.
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool empty_attached = arg.starts_with("--") && arg.size() > 3 && arg.ends_with("=") &&
                                arg.find('=') == arg.size() - 1;
    if (empty_attached && arg != "--prompt=") {
      if (root) {
        say(stderr, "mantissa: error: " + mantissa::app::message_line(arg) +
                        ": an empty value (give a value, or leave the option out)\n");
      }
      return mantissa::app::kExitError;
    }
    if (!arg.empty() || (i > 1 && std::string_view(argv[i - 1]) == "--prompt")) continue;
    if (root) {
      say(stderr,
          fmt::format(
              "mantissa: error: {}: an empty value (give a value, or leave the option "
              "out)\n",
              i > 1 && argv[i - 1][0] == '-' ? argv[i - 1] : "argument " + std::to_string(i)));
    }
    return mantissa::app::kExitError;
  }
  if (const std::optional<std::string> error = command_word_error(app, argc, argv)) {
    if (root) {
      say(stderr, "mantissa: error: " + mantissa::app::message_line(*error) + "\n");
    }
    return mantissa::app::kExitError;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (root) say(stdout, app.help("", CLI::AppFormatMode::All));
    return finish(0);
  } catch (const CLI::CallForAllHelp&) {
    if (root) say(stdout, app.help("", CLI::AppFormatMode::All));
    return finish(0);
  } catch (const CLI::ParseError& e) {
    if (root)
      say(stderr, "mantissa: error: " + mantissa::app::message_line(usage_error_text(e)) + "\n");
    return mantissa::app::kExitError;
  }
  try {
    for (const auto& action : actions) {
      const int rc = action();
      if (rc >= 0) return finish(rc);
    }
  } catch (const mantissa::dist::JobError& e) {
    // Every process raised it together: none waits for another, each ends normally.
    if (root) say(stderr, "mantissa: error: " + mantissa::app::message_line(e.what()) + "\n");
    return 2;
  } catch (const mantissa::Error& e) {
    say(stderr, "mantissa: error: " + rank_prefix(world, e.what()) +
                    mantissa::app::message_line(e.what()) + "\n");
    std::fflush(stderr);
    if (runtime.distributed())
      runtime.abort(mantissa::app::kExitError);  // the others may be waiting for this one
    return mantissa::app::kExitError;
  } catch (const std::exception& e) {  // out of memory, I/O, a library's own failure
    // fmt::print's failure to write stdout (a full disk behind `> file`) is a failed write.
    if (const std::optional<std::string> lost = stdout_write_error()) {
      say(stderr, "mantissa: error: " + *lost + "\n");
      return mantissa::app::kExitError;
    }
    say(stderr, "mantissa: failed: " + rank_prefix(world, e.what()) +
                    mantissa::app::message_line(e.what()) + "\n");
    std::fflush(stderr);
    if (runtime.distributed()) runtime.abort(mantissa::app::kExitFailure);
    return mantissa::app::kExitFailure;
  }
  return finish(0);
}

}  // namespace

int main(int argc, char** argv) {
  mantissa::app::open_standard_descriptors();
  mantissa::app::ignore_file_size_signal();
  if (const std::optional<std::string> error = mantissa::app::settle_threads()) {
    say(stderr, "mantissa: error: " + mantissa::app::message_line(*error) + "\n");
    return mantissa::app::kExitError;
  }
  if (const std::optional<std::string> note = mantissa::app::oversubscription_note()) {
    say(stderr, "mantissa: note: " + mantissa::app::message_line(*note) + "\n");
  }
  std::optional<mantissa::dist::Runtime> runtime;
  try {
    runtime.emplace(argc, argv);  // MPI only when an MPI launcher started this process
  } catch (const mantissa::Error& e) {
    say(stderr, "mantissa: error: " + mantissa::app::message_line(e.what()) + "\n");
    return 1;
  }
  return run(argc, argv, *runtime);
}
