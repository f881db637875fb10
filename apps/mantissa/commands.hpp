#pragma once
// Each subcommand of the `mantissa` program registers itself on the top-level app and
// returns the action to run when it was chosen.
#include <CLI/CLI.hpp>
#include <functional>

#include "mantissa/dist/communicator.hpp"

namespace mantissa::app {

using Action = std::function<int()>;

// Exit statuses (docs/cli.md): 0 success; 1 a failure outside the program's checks (out of
// memory, an error inside a library); 2 every error the program or library reports (bad
// arguments, config or file; a failed write); 128 + the signal for a run stopped by SIGINT
// (130) or SIGTERM (143) after writing its checkpoint.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitError = 2;
inline constexpr int kExitInterrupted = 128;

Action register_formats_command(CLI::App& app);
// Under mpirun, `world` is the job's processes (train and eval run data-parallel, bench times
// it); otherwise one process.
Action register_train_command(CLI::App& app, const dist::Communicator& world);
Action register_eval_command(CLI::App& app, const dist::Communicator& world);
Action register_generate_command(CLI::App& app);
Action register_inspect_command(CLI::App& app);
Action register_bench_command(CLI::App& app, const dist::Communicator& world);
Action register_compare_command(CLI::App& app);
Action register_report_command(CLI::App& app);

}  // namespace mantissa::app
