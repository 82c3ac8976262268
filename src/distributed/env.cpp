#include "distributed/env.h"

#include <cstdlib>

#include "core/errors.h"

namespace biaslab::dist {
namespace {

struct Reader {
  const GetEnv& getenv;

  bool has(const char* name) const {
    const char* v = getenv(name);
    return v && *v;
  }
  std::string text(const char* name, const std::string& fallback = "") const {
    return has(name) ? std::string(getenv(name)) : fallback;
  }
  int integer(const char* name, int lo, int hi, const std::string& context) const {
    if (!has(name)) throw ConfigError("environment: " + context + " sets no " + name);
    const std::string v = getenv(name);
    size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != v.size() || n < lo || n > hi)
      throw ConfigError("environment: " + std::string(name) + "='" + v + "' is not an integer in [" +
                        std::to_string(lo) + ", " + std::to_string(hi) + "] (" + context + ")");
    return int(n);
  }
  int integer_or(const char* name, int fallback, int lo, int hi, const std::string& context) const {
    return has(name) ? integer(name, lo, hi, context) : fallback;
  }
};

// "2(x3),1" -> 2: the tasks on the first node (Slurm's SLURM_TASKS_PER_NODE).
int first_count(const std::string& s) {
  size_t used = 0;
  try {
    const int n = std::stoi(s, &used);
    return used > 0 && n > 0 ? n : 1;
  } catch (const std::exception&) {
    return 1;
  }
}

}  // namespace

DistEnv read_dist_env(const GetEnv& getenv) {
  const Reader r{getenv};
  DistEnv env;
  constexpr int kMaxRanks = 1 << 20;
  if (r.has("WORLD_SIZE")) {
    const std::string ctx = "torchrun-style launch: WORLD_SIZE is set";
    env.world_size = r.integer("WORLD_SIZE", 1, kMaxRanks, ctx);
    if (env.world_size == 1) return DistEnv{};
    env.launcher = r.has("BIASLAB_LAUNCH_COMMAND")  ? "biaslab train --nproc"
                   : r.has("TORCHELASTIC_RUN_ID") ? "torchrun"
                                                  : "environment variables";
    env.rank = r.integer("RANK", 0, env.world_size - 1, ctx);
    env.local_world_size = r.integer_or("LOCAL_WORLD_SIZE", env.world_size, 1, env.world_size, ctx);
    env.local_rank = r.integer_or("LOCAL_RANK", env.rank % env.local_world_size, 0, env.local_world_size - 1, ctx);
    env.master_addr = r.text("MASTER_ADDR");
    if (env.master_addr.empty()) throw ConfigError("environment: " + ctx + " but MASTER_ADDR is not");
    env.master_port = r.integer("MASTER_PORT", 1, 65535, ctx);
    env.launcher_store = r.text("TORCHELASTIC_USE_AGENT_STORE") == "True";
    env.attempt = r.integer_or("TORCHELASTIC_RESTART_COUNT", 0, 0, kMaxRanks, ctx);
    return env;
  }
  // srun sets SLURM_STEP_ID for the tasks it starts; a batch script's own shell (which
  // sees SLURM_NTASKS of the allocation too) is not a rank.
  if (r.has("SLURM_NTASKS") && r.has("SLURM_PROCID") && r.has("SLURM_STEP_ID")) {
    const std::string ctx = "Slurm task (srun)";
    env.world_size = r.integer("SLURM_NTASKS", 1, kMaxRanks, ctx);
    if (env.world_size == 1) return DistEnv{};
    env.launcher = "slurm";
    env.rank = r.integer("SLURM_PROCID", 0, env.world_size - 1, ctx);
    env.local_world_size = r.has("SLURM_NTASKS_PER_NODE")
                               ? r.integer("SLURM_NTASKS_PER_NODE", 1, env.world_size, ctx)
                               : first_count(r.text("SLURM_TASKS_PER_NODE", "1"));
    env.local_rank = r.integer_or("SLURM_LOCALID", 0, 0, kMaxRanks, ctx);
    env.master_addr = r.text("MASTER_ADDR");
    if (env.master_addr.empty())
      throw ConfigError("environment: " + ctx + " of " + std::to_string(env.world_size) +
                        " needs MASTER_ADDR, the host of rank 0, e.g. "
                        "export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)");
    env.master_port = r.integer_or("MASTER_PORT", 29500, 1, 65535, ctx);
    return env;
  }
  return env;
}

DistEnv read_dist_env() {
  return read_dist_env([](const char* name) -> const char* { return std::getenv(name); });
}

}  // namespace biaslab::dist
