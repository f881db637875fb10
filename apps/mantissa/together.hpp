#pragma once
// Work that every process of a job does alike before training (reading the arguments and the
// config): an Error on any process becomes dist::JobError on every one, so a bad config stops
// the whole job at once and is reported once, by rank 0 (main.cpp).
#include <functional>
#include <string>

#include "mantissa/dist/step_agreement.hpp"
#include "mantissa/error.hpp"

namespace mantissa::app {

inline void together(const dist::Communicator& world, const std::function<void()>& work) {
  std::string failure;
  try {
    work();
  } catch (const Error& e) {
    failure = e.what();
    if (failure.empty()) failure = "an error without a message";
  }
  dist::agree_on_success(world, failure);
}

}  // namespace mantissa::app
