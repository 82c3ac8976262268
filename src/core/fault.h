#pragma once
// Fault injection for the reliability tests, driven by the environment variable
// BIASLAB_FAULT=KIND:STEP[,KIND:STEP...]. Without it every check is a no-op.
//   kill_after_step:N        SIGKILL right after optimizer step N
//   kill_in_checkpoint:N     SIGKILL during the N-th checkpoint write of the process,
//                            after the temporary file is written, before the rename
//   nan_loss_at_step:N       the loss of step N is replaced by NaN
//   sigterm_after_step:N     the process sends itself SIGTERM right after step N
// With BIASLAB_FAULT_RANK=R only distributed rank R (environment RANK, 0 when unset) acts.
#include <cstdint>
#include <string>

namespace biaslab::fault {

/// Throws ConfigError (exit 2) naming BIASLAB_FAULT when it is set but malformed (an
/// unknown kind, or a step that is not a non-negative integer). main() calls it first.
void check_environment();
/// True when BIASLAB_FAULT asks for `kind` at `step`.
bool at(const std::string& kind, int64_t step);
/// Kills the process with SIGKILL when BIASLAB_FAULT asks for `kind` at `step`.
void kill_if(const std::string& kind, int64_t step);

}  // namespace biaslab::fault
