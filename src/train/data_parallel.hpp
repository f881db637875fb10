#pragma once
// Internal: the trainer's side of data-parallel training (docs/distributed.md). Every process
// of the job holds the whole model and trains on its part of every global batch; the
// gradients of the processes' shares are summed in buckets started during the last backward
// of the step, and the step's facts (non-finite gradients, the gradient norm, the loss, a stop
// request) are agreed on, so every process takes the same step and keeps the same state.
// With one process (no mpirun) nothing is communicated and the step is the single-process
// step, bit for bit.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mantissa/amp/grad_scaler.hpp"
#include "mantissa/amp/quantized_layers.hpp"
#include "mantissa/autograd/variable.hpp"
#include "mantissa/config/config.hpp"
#include "mantissa/dist/communicator.hpp"
#include "mantissa/dist/gradient_reducer.hpp"
#include "mantissa/tensor/random.hpp"

namespace mantissa::train {

class DataParallel {
 public:
  // `world`: the job's processes (a one-rank communicator without mpirun). Its waits for a
  // silent peer give up after config.timeout_seconds.
  DataParallel(const dist::Communicator& world, const config::DistConfig& config);
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  bool is_root() const { return comm_.is_root(); }
  bool distributed() const { return comm_.size() > 1; }

  // This process's part of every global batch of `global_batch` samples (the config's
  // batch_size); an Error naming the key when it does not split evenly across the processes.
  tensor::BatchPart batch_part(std::int64_t global_batch) const;

  // Collective, for work that may fail on some processes (reading files): runs `work` here and
  // turns an Error on any process into dist::JobError on every one (its message naming the
  // first process that failed), so no process goes on to wait for one that stopped. With one
  // process it only runs `work`.
  void together(const std::function<void()>& work) const;
  // As together(), but rank 0 runs `work` first and the others once it succeeded (it may
  // write what they read: a dataset cache). The others wait for it up to kRootWorkSeconds.
  void root_first(const std::function<void()>& work) const;
  // As together(), for work only rank 0 does (writing a checkpoint); the others wait for it
  // up to kRootWorkSeconds and learn whether it succeeded. Rank 0's own wait for them (they
  // have nothing to do) has the ordinary dist timeout: a rank that died is named within it.
  void on_root(const std::function<void()>& work) const;
  // Rank 0's string, on every process.
  std::string from_root(const std::string& mine) const;
  // Collective: throws an Error naming the first process whose state (tensor names and
  // values, metadata; compared by a 64-bit FNV-1a digest) differs from rank 0's.
  void require_identical_state(const std::map<std::string, tensor::Tensor>& tensors,
                               const std::map<std::string, std::string>& metadata,
                               const std::string& what) const;
  // Collective: the same for a digest each process computed (its config, its data).
  void require_identical_digest(std::uint64_t digest, const std::string& what) const;

  // Collective: the gradient reducer over `params` (the model's, in registration order).
  void attach(const std::vector<autograd::Variable>& params);
  // The backward of one micro-batch, whose loss the trainer weighted by 1/N (this process's
  // share of the global batch's mean loss); the step's last carries the reducer's hook, so its
  // buckets start while it runs (with dist.overlap).
  void backward(const autograd::Variable& root, bool last_of_step);
  // Collective: every gradient becomes the sum of the processes' shares, in rank order: the
  // gradient of the global batch's mean loss.
  void finish();
  // What the amp step uses to agree on the gradients' facts (empty with one process).
  amp::StepAgreement step_agreement() const;
  // What the fp8 layers use to combine their step figures (empty with one process):
  // collective, the max of every process's amax (non-finite anywhere: NaN) and the sum of
  // their counts, so every process's scales follow the whole global batch, as one process's.
  amp::Fp8Layers::Agreement fp8_agreement() const;
  // Collective: the mean of every process's `value` (summed in rank order, then / N).
  double mean(double value) const;
  // Collective: whether `flag` holds on any process.
  bool any(bool flag) const;
  // Collective: the first process's `value` (in rank order) that is not 0; 0 when all are.
  int first_nonzero(int value) const;

  // The reducer's figures (null before attach or with one process).
  const dist::ReducerStats* stats() const;

  // How long the others wait for work rank 0 does alone before they give up.
  static constexpr double kRootWorkSeconds = 600;

 private:
  dist::Communicator comm_;
  dist::Communicator root_work_;  // the same processes, waiting up to kRootWorkSeconds
  config::DistConfig config_;
  std::unique_ptr<dist::GradientReducer> reducer_;
};

}  // namespace mantissa::train
