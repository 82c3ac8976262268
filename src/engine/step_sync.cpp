#include "engine/step_sync.h"

#include <torch/torch.h>

#include <csignal>

#include "core/seed_mix.h"
#include "core/signals.h"
#include "data/loader.h"
#include "distributed/communicator.h"

namespace biaslab {
namespace {

class LocalStepSync : public StepSync {
 public:
  void begin_step(int64_t, int64_t, int64_t, StepOptions&) override {}
  SyncedStats end_step(int64_t, const StepStats& local, int64_t n) override {
    return SyncedStats{local.loss, local.grad_norm, local.correct, n};
  }
  int stop_after_step() override { return stop_signal(); }
  // `last` was just written at the epoch end, so stop now rather than after one more step.
  int stop_after_evaluation() override { return stop_signal(); }
  void before_stopping(int64_t) override {}
  void before_evaluation(const std::vector<torch::Tensor>&, int64_t) override {}
  void set_seed(uint64_t) override {}
  bool leads() const override { return true; }
  dist::Communicator* communicator() const override { return nullptr; }
};

class DataParallelStepSync : public StepSync {
 public:
  DataParallelStepSync(dist::Communicator& comm, const Loader& train) : comm_(comm), train_(train) {}

  void begin_step(int64_t steps_done, int64_t batch_index, int64_t n, StepOptions& options) override {
    // This rank's share of the global batch weights its gradient (shards may differ by one).
    const int64_t batch = train_.options().batch_size;
    const int64_t global_n = std::min(batch, train_.size() - batch_index * batch);
    const double weight = double(n) / double(global_n);
    options.reduce_gradients = [this, weight, step = steps_done + 1](const std::vector<torch::Tensor>& params) {
      comm_.reduce_gradients(params, weight, "gradient all-reduce at step " + std::to_string(step));
    };
    // Dropout and drop-path masks: each rank draws its own, from (seed, step, rank), so a
    // resumed distributed run draws what the uninterrupted one did.
    torch::manual_seed(mix_seed(mix_seed(seed_ ^ mix_seed(uint64_t(steps_done))) + uint64_t(comm_.rank())));
  }

  SyncedStats end_step(int64_t steps_done, const StepStats& local, int64_t n) override {
    // The global batch's statistics, rank 0's norm of the reduced gradients (every rank
    // clips by the same factor, whatever its threads or hardware), and whether any rank
    // was asked to stop: every rank then takes the same decision (update, skip, abort, stop).
    const int local_stop = stop_signal();
    const auto g = comm_.sum({local.loss * double(n), double(local.correct), double(n), local_stop ? 1.0 : 0.0,
                              comm_.rank() == 0 ? local.grad_norm : 0.0},
                             "step statistics at step " + std::to_string(steps_done + 1));
    agreed_stop_ = g[3] > 0 ? (local_stop ? local_stop : SIGTERM) : 0;
    return SyncedStats{g[0] / g[2], g[4], int64_t(g[1]), int64_t(g[2])};
  }

  int stop_after_step() override { return agreed_stop_; }
  // The ranks agree on stopping at the next step instead; a signal during the final
  // evaluation finishes the run.
  int stop_after_evaluation() override { return 0; }

  // No rank exits before rank 0's checkpoint is complete (a launcher that sees one rank
  // exit stops the others).
  void before_stopping(int64_t step) override { comm_.barrier("stopping at step " + std::to_string(step)); }

  // BatchNorm normalises each rank's shard with its own statistics; the running
  // statistics evaluated and saved are rank 0's (as PyTorch's DDP broadcasts them).
  void before_evaluation(const std::vector<torch::Tensor>& buffers, int64_t epoch) override {
    if (!buffers.empty()) comm_.broadcast(buffers, "running statistics after epoch " + std::to_string(epoch));
  }

  void set_seed(uint64_t seed) override { seed_ = seed; }
  bool leads() const override { return comm_.rank() == 0; }
  dist::Communicator* communicator() const override { return &comm_; }

 private:
  dist::Communicator& comm_;
  const Loader& train_;
  uint64_t seed_ = 0;
  int agreed_stop_ = 0;  // a stop signal some rank received, as of the last step
};

}  // namespace

std::unique_ptr<StepSync> local_step_sync() { return std::make_unique<LocalStepSync>(); }

std::unique_ptr<StepSync> data_parallel_step_sync(dist::Communicator& comm, const Loader& train) {
  return std::make_unique<DataParallelStepSync>(comm, train);
}

}  // namespace biaslab
