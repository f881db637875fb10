#include "terminal_events.hpp"
#include "terminal_text.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <cmath>
#include <cstdio>

namespace mantissa::app {
namespace {

// To stderr; text that cannot be written (a reader of the output that went away) is dropped,
// never an error: the run, its checkpoints and its metrics go on.
void put(const std::string& text) {
  std::fputs(text.c_str(), stderr);
}

}  // namespace

TerminalEvents::TerminalEvents() : tty_(::isatty(STDERR_FILENO) != 0) {}

TerminalEvents::~TerminalEvents() {
  end_live_line();
}

void TerminalEvents::end_live_line() {
  if (!live_line_open_) return;
  std::fputc('\n', stderr);
  live_line_open_ = false;
}

void TerminalEvents::message(const std::string& line) {
  end_live_line();
  // One line by the interface's contract: a newline inside (from a path or a value in the
  // config) is shown as \x0a, so it cannot forge a line of its own.
  put(message_line(line) + "\n");
}

void TerminalEvents::progress(const train::Progress& p) {
  // A run without a loss scaler shows no scale (not a 1 it never used).
  // A power of two (every dynamic scale) as 2^k, as the skipped-step lines write it.
  std::string scale;
  if (p.loss_scale) {
    int e = 0;
    const bool power = *p.loss_scale != 1 && std::frexp(*p.loss_scale, &e) == 0.5;
    scale =
        power ? fmt::format("  scale 2^{}", e - 1) : fmt::format("  scale {:.4g}", *p.loss_scale);
  }
  const std::string line =
      fmt::format("step {}/{}  loss {:.4g}{}  lr {:.3g}  skipped {}  {:.0f} {}/s  eta {:.0f}s",
                  p.step, p.max_steps, p.loss, scale, p.learning_rate, p.skipped_steps,
                  p.items_per_second, p.unit, p.eta_seconds);
  if (tty_) {
    put(fmt::format("\r{:<110}", line));
    std::fflush(stderr);
    live_line_open_ = true;
  } else {
    put(line + "\n");
  }
}

void TerminalEvents::evaluating(std::int64_t) {
  end_live_line();
}

}  // namespace mantissa::app
