#include "distributed/launch.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/errors.h"
#include "core/signals.h"
#include "core/subprocess.h"
#include "distributed/communicator.h"

extern char** environ;

namespace biaslab::dist {
namespace {

// Each rank's environment: this process's without the variables the launcher sets itself,
// plus the rank's place in the job and the rendezvous store at 127.0.0.1:`port`.
std::vector<std::vector<std::string>> rank_environments(int nproc, const std::vector<std::string>& typed, int port) {
  static const char* kOwn[] = {"RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=", "MASTER_ADDR=",
                               "MASTER_PORT=", "TORCHELASTIC_USE_AGENT_STORE=", "TORCHELASTIC_RESTART_COUNT=",
                               "BIASLAB_LAUNCH_COMMAND="};
  std::vector<std::string> inherited;
  for (char** e = environ; *e; ++e) {
    bool own = false;
    for (const char* k : kOwn) own = own || std::strncmp(*e, k, std::strlen(k)) == 0;
    if (!own) inherited.emplace_back(*e);
  }
  // Like torchrun, bound the threads of libraries that size their pools from the
  // environment at load time (OpenMP, OpenBLAS) unless the user chose: the node's cores
  // shared among the ranks, as runtime.threads: auto does for LibTorch's own pool.
  if (!std::getenv("OMP_NUM_THREADS"))
    inherited.push_back("OMP_NUM_THREADS=" +
                        std::to_string(std::max(1, int(std::thread::hardware_concurrency()) / nproc)));
  // meta.json records the command the user typed, not the ranks' (which lack --nproc).
  std::string command;
  for (const auto& a : typed) command += (command.empty() ? "" : " ") + a;
  inherited.push_back("BIASLAB_LAUNCH_COMMAND=" + command);
  std::vector<std::vector<std::string>> envs(nproc, inherited);
  for (int r = 0; r < nproc; ++r) {
    for (const auto& kv : {std::pair<std::string, std::string>{"RANK", std::to_string(r)},
                           {"WORLD_SIZE", std::to_string(nproc)}, {"LOCAL_RANK", std::to_string(r)},
                           {"LOCAL_WORLD_SIZE", std::to_string(nproc)}, {"MASTER_ADDR", "127.0.0.1"},
                           {"MASTER_PORT", std::to_string(port)}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}})
      envs[r].push_back(kv.first + "=" + kv.second);
  }
  return envs;
}

// Waits for all ranks; the first failure stops the others (SIGTERM, then SIGKILL after a
// grace period long enough for a checkpoint). Returns the first failed rank's status.
int wait_for_ranks(Supervisor& ranks, const std::vector<pid_t>& pids) {
  int result = 0;
  while (ranks.running() > 0) {
    const std::optional<ChildExit> exit = ranks.wait();
    if (!exit) break;
    const auto rank = std::find(pids.begin(), pids.end(), exit->pid) - pids.begin();
    if (exit->code() != 0 && result == 0) {
      result = exit->code();
      // A rank stopped by a signal (75) wrote nothing itself: the others agreed to stop at
      // the same step and rank 0 is writing its checkpoint; do not hurry them.
      if (ranks.running() > 0 && !ranks.forwarded_signal() && result != kExitInterrupted) {
        spdlog::error("--nproc: rank {} {}; stopping the other {} rank(s)", rank, exit->describe(), ranks.running());
        ranks.terminate(std::chrono::seconds(30));
      }
    }
  }
  return result;
}

}  // namespace

std::vector<std::string> without_nproc(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--nproc") {
      ++i;  // and its value
      continue;
    }
    if (argv[i].rfind("--nproc=", 0) == 0) continue;
    out.push_back(argv[i]);
  }
  return out;
}

int launch_local(int nproc, const std::vector<std::string>& original, std::chrono::milliseconds timeout) {
  const std::vector<std::string> args = without_nproc(original);
  if (nproc < 1 || nproc > Supervisor::kMaxForwarded)
    throw ConfigError("--nproc: " + std::to_string(nproc) + " is not in [1, " +
                      std::to_string(Supervisor::kMaxForwarded) + "]");
  const StoreServer store(nproc, timeout);
  spdlog::info("--nproc {}: starting {} ranks on this machine (rendezvous 127.0.0.1:{})", nproc, nproc, store.port());
  const auto envs = rank_environments(nproc, original, store.port());

  // SIGINT/SIGTERM are forwarded to the ranks, which run in their own process groups (a
  // terminal's Ctrl-C reaches them once, through this process); a rank whose launcher
  // dies is told to stop. Ranks started before a failure are killed when `ranks` goes.
  Supervisor ranks(/*forward_signals=*/true);
  std::vector<pid_t> pids;
  for (int r = 0; r < nproc; ++r) {
    ChildSpec spec;
    spec.argv = args;
    spec.program = "/proc/self/exe";
    spec.env = envs[r];
    spec.orphaned_status = 128 + SIGTERM;
    try {
      pids.push_back(ranks.spawn(spec));
    } catch (const SpawnError& e) {
      throw DistError("--nproc: could not start rank " + std::to_string(r) + ": " + std::strerror(e.errno_value()));
    }
  }
  return wait_for_ranks(ranks, pids);
}

}  // namespace biaslab::dist
