#pragma once
// Where and how this process computes: the device, the resolved precision, the thread
// count and, in a distributed job, its place in the job and its communicator. Written
// once for every command that runs a model (train, eval, bench).
#include <c10/core/Device.h>

#include <memory>
#include <string>

#include "config/config.h"
#include "distributed/env.h"

namespace biaslab {
namespace dist {
class Communicator;
}

struct RunContext {
  c10::Device device{c10::kCPU};
  std::string precision;  ///< train.precision resolved for the device (auto -> fp32 | bf16)
  int threads = 1;        ///< intra-op threads in effect
  dist::DistEnv env;      ///< world_size 1 outside a distributed job
  std::string backend;    ///< gloo | nccl in a distributed job, "" otherwise
  std::unique_ptr<dist::Communicator> comm;  ///< after join_ranks in a distributed job

  RunContext();
  ~RunContext();
  RunContext(RunContext&&) noexcept;
  RunContext& operator=(RunContext&&) noexcept;

  /// The process that writes the run directory: rank 0, or the only process.
  bool writer() const;
};

/// For commands that run one process (bench): runtime.device, train.precision (ConfigError
/// with `precision_hint` when it cannot run there) and runtime.threads.
RunContext process_context(const Config& cfg, const std::string& precision_hint);

/// For training: as process_context, in the job the launcher's variables describe (the
/// local rank's GPU, the dist backend, runtime.threads: auto shares the node's cores among
/// its ranks, log lines prefixed with the rank), and the global generator seeded.
RunContext training_context(const Config& cfg);

/// For re-evaluating a trained model: the precision its run computed in (`recorded`, from
/// summary.json) when the config says auto and one was recorded.
RunContext evaluation_context(const Config& cfg, const std::string& recorded);

/// Distributed job: every rank joins the process group here (rank 0 logs the job).
void join_ranks(RunContext& ctx, const Config& cfg);

/// Distributed job: every rank must train what rank 0 trains. `experiment` describes this
/// rank's (config identity, data, model size); ranks launched with other arguments,
/// presets or data log the first difference and every rank stops with ConfigError.
void require_same_experiment(RunContext& ctx, const std::string& experiment);

}  // namespace biaslab
