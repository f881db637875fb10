#pragma once
// How `mantissa train` shows a run: the trainer's events drawn on stderr. On a terminal the
// progress is one live line rewritten in place; elsewhere (a pipe, a log file) a plain line
// per logging window.
#include "mantissa/train/trainer.hpp"

namespace mantissa::app {

class TerminalEvents final : public train::TrainerEvents {
 public:
  TerminalEvents();
  ~TerminalEvents() override;
  void message(const std::string& line) override;
  void progress(const train::Progress& p) override;
  void evaluating(std::int64_t step) override;

 private:
  void end_live_line();
  bool tty_;
  bool live_line_open_ = false;
};

}  // namespace mantissa::app
