#pragma once
// What the processes of one training run agree on at each step: nothing for a single
// process; for data-parallel ranks, the gradient of the global batch, its statistics,
// whether to stop, each rank's dropout seed, and the BatchNorm statistics evaluated. The
// Trainer asks its StepSync at each of those points and never tests whether it runs
// distributed; the collectives themselves stay in distributed/communicator.h.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/step.h"

namespace biaslab {
namespace dist {
class Communicator;
}
class Loader;

/// A step's statistics as the update sees them: this process's, or the global batch's.
struct SyncedStats {
  double loss = 0.0;       ///< mean loss
  double grad_norm = 0.0;  ///< gradient norm the step clips by
  int64_t correct = 0;
  int64_t n = 0;           ///< samples
};

class StepSync {
 public:
  virtual ~StepSync() = default;

  /// Before the forward pass of the step after `steps_done`, on batch `batch_index` of
  /// which this process holds `n` samples: seeds the step's random draws and sets the
  /// gradient reduction in `options`.
  virtual void begin_step(int64_t steps_done, int64_t batch_index, int64_t n, StepOptions& options) = 0;
  /// After backward: the statistics the update and the non-finite policy act on.
  virtual SyncedStats end_step(int64_t steps_done, const StepStats& local, int64_t n) = 0;
  /// The stop signal (SIGINT/SIGTERM) to stop at after the step just taken, or 0.
  virtual int stop_after_step() = 0;
  /// The stop signal to stop at after an epoch's evaluation, or 0.
  virtual int stop_after_evaluation() = 0;
  /// Before leaving with Interrupted at `step` (after the checkpoint).
  virtual void before_stopping(int64_t step) = 0;
  /// Before the evaluation after `epoch`: the running statistics (buffers) to evaluate.
  virtual void before_evaluation(const std::vector<torch::Tensor>& buffers, int64_t epoch) = 0;

  /// The seed each step's random draws derive from (runtime.seed), where the sync
  /// reseeds them.
  virtual void set_seed(uint64_t seed) = 0;
  /// The process that shows progress (rank 0, or the only one).
  virtual bool leads() const = 0;
  /// What evaluate() combines its sums over (nullptr: this process alone).
  virtual dist::Communicator* communicator() const = 0;
};

/// One process: nothing to agree on; stop signals are this process's.
std::unique_ptr<StepSync> local_step_sync();
/// Data-parallel ranks of `comm`, each training on its shard of the global batches of `train`.
std::unique_ptr<StepSync> data_parallel_step_sync(dist::Communicator& comm, const Loader& train);

}  // namespace biaslab
