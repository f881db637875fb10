#pragma once
// Each subcommand of the `mantissa` program registers itself on the top-level app and
// returns the action to run when it was chosen.
#include <CLI/CLI.hpp>
#include <functional>

#include "mantissa/dist/communicator.hpp"

namespace mantissa::app {

using Action = std::function<int()>;

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
