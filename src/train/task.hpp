#pragma once
// Internal: a model paired with its data (GPT on text, MLP/CNN on images).
#include <memory>
#include <string>

#include "mantissa/config/config.hpp"
#include "mantissa/data/loaders.hpp"
#include "mantissa/nn/models.hpp"
#include "mantissa/train/trainer.hpp"

namespace mantissa::train {

class Task {
 public:
  virtual ~Task() = default;
  virtual nn::Module& module() = 0;
  // The next training batch's loss (one micro-batch).
  virtual autograd::Variable next_train_loss() = 0;
  // Builds the validation loader now (evaluate does so on first use): validation data too
  // small for one batch is an error before the first training step, not after the last.
  virtual void prepare_evaluation() = 0;
  // One validation run over `steps` batches from the start of the validation data.
  virtual EvalResult evaluate(std::int64_t steps) = 0;
  virtual std::int64_t items_per_batch() const = 0;  // tokens or samples
  virtual const char* unit() const = 0;              // "tokens" or "samples"
  virtual data::LoaderState loader_state() const = 0;
  virtual void set_loader_state(const data::LoaderState& s) = 0;
  virtual tensor::RngState rng_state() const = 0;  // dropout
  virtual void set_rng_state(const tensor::RngState& s) = 0;
  // Data parallel: this process trains on part `part` of every batch (its training loader
  // reads that part; dropout draws that part of the batch's mask).
  virtual void set_batch_part(const tensor::BatchPart& part) = 0;
  // A digest of the training and validation data (data parallel: every process must hold
  // the same).
  virtual std::uint64_t data_digest() const = 0;
};

// `kjv_corpus` supplies the KJV text when the kjv dataset is not cached yet.
std::unique_ptr<Task> make_task(const config::TrainerConfig& config,
                                const data::CorpusProvider& kjv_corpus);

}  // namespace mantissa::train
