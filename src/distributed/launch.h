#pragma once
// `biaslab train --nproc N`: a small torchrun for one machine. Starts this executable N
// times as ranks 0..N-1 (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT in their environment) around a rendezvous store it hosts itself, forwards
// SIGINT/SIGTERM to them, and when one rank fails stops the others.
#include <chrono>
#include <string>
#include <vector>

namespace biaslab::dist {

/// Runs `/proc/self/exe argv...` without its --nproc as `nproc` ranks and waits for them
/// (BIASLAB_LAUNCH_COMMAND tells them the command as typed). Returns 0 when all succeed,
/// else the status of the first rank that failed (128 + signal when killed).
int launch_local(int nproc, const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

/// `argv` without its "--nproc N" / "--nproc=N" (the ranks' command line).
std::vector<std::string> without_nproc(const std::vector<std::string>& argv);

}  // namespace biaslab::dist
