#include "distributed/launch.h"

#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/errors.h"
#include "distributed/communicator.h"

extern char** environ;

namespace biaslab::dist {
namespace {

volatile sig_atomic_t g_forwarded = 0;
pid_t g_children[256];
volatile sig_atomic_t g_child_count = 0;

void forward_signal(int sig) {
  g_forwarded = sig;
  for (int i = 0; i < g_child_count; ++i)
    if (g_children[i] > 0) ::kill(g_children[i], sig);
}

std::string describe(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "was killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

int exit_status(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

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
  if (nproc < 1 || nproc > int(sizeof g_children / sizeof g_children[0]))
    throw ConfigError("--nproc: " + std::to_string(nproc) + " is not in [1, 256]");
  const StoreServer store(nproc, timeout);
  spdlog::info("--nproc {}: starting {} ranks on this machine (rendezvous 127.0.0.1:{})", nproc, nproc, store.port());

  // Everything the children need is prepared before fork(): between fork and exec only
  // async-signal-safe calls are allowed.
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
  std::string typed;
  for (const auto& a : original) typed += (typed.empty() ? "" : " ") + a;
  inherited.push_back("BIASLAB_LAUNCH_COMMAND=" + typed);
  std::vector<std::vector<std::string>> envs(nproc, inherited);
  for (int r = 0; r < nproc; ++r) {
    for (const auto& kv : {std::pair<std::string, std::string>{"RANK", std::to_string(r)},
                           {"WORLD_SIZE", std::to_string(nproc)}, {"LOCAL_RANK", std::to_string(r)},
                           {"LOCAL_WORLD_SIZE", std::to_string(nproc)}, {"MASTER_ADDR", "127.0.0.1"},
                           {"MASTER_PORT", std::to_string(store.port())}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}})
      envs[r].push_back(kv.first + "=" + kv.second);
  }
  auto pointers = [](std::vector<std::string>& v) {
    std::vector<char*> p;
    for (auto& s : v) p.push_back(s.data());
    p.push_back(nullptr);
    return p;
  };
  std::vector<std::string> argv_strings = args;
  std::vector<char*> argv = pointers(argv_strings);
  std::vector<std::vector<char*>> envps;
  for (auto& e : envs) envps.push_back(pointers(e));

  // SIGINT/SIGTERM are forwarded to the ranks. They are blocked in this thread while
  // forking, so a child cannot run the forwarding handler before it resets it; one that
  // arrives meanwhile (here or on another thread) is forwarded to every rank after.
  struct sigaction action {};
  action.sa_handler = forward_signal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int {}, old_term {};
  ::sigaction(SIGINT, &action, &old_int);
  ::sigaction(SIGTERM, &action, &old_term);
  sigset_t stop_signals, previous_mask;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &stop_signals, &previous_mask);
  auto restore_signals = [&] {
    g_child_count = 0;
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
    ::pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
  };

  const pid_t launcher = ::getpid();
  std::vector<pid_t> pids(nproc, -1);
  for (int r = 0; r < nproc; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::signal(SIGINT, SIG_DFL);
      ::signal(SIGTERM, SIG_DFL);
      ::pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
      // Signals reach the ranks through this process only (a terminal's Ctrl-C once, not
      // twice), and a rank whose launcher dies is told to stop.
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != launcher) ::_exit(128 + SIGTERM);  // the launcher died before prctl
      ::execve("/proc/self/exe", argv.data(), envps[r].data());
      ::_exit(127);
    }
    if (pid < 0) {
      const int error = errno;
      for (int k = 0; k < r; ++k) {
        ::kill(pids[k], SIGKILL);
        ::waitpid(pids[k], nullptr, 0);
      }
      restore_signals();
      throw DistError("--nproc: could not start rank " + std::to_string(r) + ": " + std::strerror(error));
    }
    pids[r] = pid;
    g_children[r] = pid;
    g_child_count = r + 1;
  }
  ::pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);  // a pending signal is forwarded now
  if (g_forwarded) forward_signal(g_forwarded);

  // Wait for all; the first failure stops the others (SIGTERM, then SIGKILL after a grace
  // period long enough for a checkpoint).
  int result = 0, running = nproc;
  std::chrono::steady_clock::time_point kill_at{};
  bool stopping = false;
  while (running > 0) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno != EINTR) break;
    if (pid <= 0) {
      if (stopping && std::chrono::steady_clock::now() > kill_at) {
        for (int r = 0; r < nproc; ++r)
          if (pids[r] > 0) ::kill(pids[r], SIGKILL);
        stopping = false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    int rank = 0;
    while (rank < nproc && pids[rank] != pid) ++rank;
    if (rank == nproc) continue;
    pids[rank] = -1;
    g_children[rank] = -1;
    --running;
    if (exit_status(status) != 0 && result == 0) {
      result = exit_status(status);
      // A rank stopped by a signal (75) wrote nothing itself: the others agreed to stop at
      // the same step and rank 0 is writing its checkpoint; do not hurry them.
      if (running > 0 && !g_forwarded && result != 75) {
        spdlog::error("--nproc: rank {} {}; stopping the other {} rank(s)", rank, describe(status), running);
        for (int r = 0; r < nproc; ++r)
          if (pids[r] > 0) ::kill(pids[r], SIGTERM);
        stopping = true;
        kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      }
    }
  }
  restore_signals();
  return result;
}

}  // namespace biaslab::dist
