#pragma once
// What the program settles about its process before it parses anything: the standard
// descriptors, the signals a write can raise, and the OpenMP threads.
#include <optional>
#include <string>

namespace mantissa::app {

// Opens /dev/null on each of descriptors 0, 1 and 2 that is closed (a daemon or cron job
// started with `2>&-`): the next file opened would otherwise take the number, and messages
// meant for the terminal would be written into it (a run directory's lock, a checkpoint).
void open_standard_descriptors();

// Ignores SIGXFSZ: a write past the process's file-size limit (`ulimit -f`) then fails with
// EFBIG, which the writers report ("File too large"), instead of killing the program.
void ignore_file_size_signal();

// Teams of the planned size (kernels::settle_openmp_teams), and a thread count a machine can
// run: the error's text when OMP_NUM_THREADS asks for more than 16 threads a core, or when
// MANTISSA_AMX holds a value that is not a setting (kernels::amx_setting_error), or when
// OMP_STACKSIZE is below 256K (stack_size_error).
std::optional<std::string> settle_threads();

// A note when OpenMP runs more threads than the CPUs this process may use (its affinity mask:
// `taskset`, a container's cpuset): the run works, slower than with fewer threads.
std::optional<std::string> oversubscription_note();

// The error's text when OMP_STACKSIZE asks for less than 256 KiB a thread (16K once crashed
// training: the kernels' tiles on the worker threads' stacks overflowed them). A value that
// is not a size is left to the OpenMP runtime, which reports it.
std::optional<std::string> stack_size_error();

}  // namespace mantissa::app
