#pragma once
// A sweep for another scheduler: one self-contained, idempotent `biaslab train`
// command per run (rerunning one skips a finished run and resumes an interrupted
// one), as a list or as a Slurm array job. The runs land in the sweep directory's
// layout, so `biaslab report` reads them as if `biaslab sweep` had run them.
#include <filesystem>
#include <string>

#include "sweep/plan.h"

namespace biaslab::sweep {

/// One command per line, in plan order.
std::string command_list(const std::string& exe, const Layout& layout, const Plan& plan);

/// Writes SWEEP_DIR/commands.txt and SWEEP_DIR/sweep.slurm (array task i runs line
/// i + 1 with runtime.threads = the task's CPUs); returns the script's path.
std::filesystem::path write_slurm(const std::string& exe, const Layout& layout, const Plan& plan, int cpus_per_task);

}  // namespace biaslab::sweep
