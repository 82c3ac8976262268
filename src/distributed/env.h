#pragma once
// Where this process stands in a distributed job, read from the launcher's environment:
// torchrun (and `biaslab train --nproc`) set RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; `srun` sets SLURM_PROCID, SLURM_NTASKS,
// SLURM_LOCALID (the master address then comes from MASTER_ADDR). Without either, the
// process is a job of one.
#include <functional>
#include <string>

namespace biaslab::dist {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;         ///< rank on this node (picks the CUDA device)
  int local_world_size = 1;   ///< ranks on this node (share its cores)
  std::string master_addr;    ///< host of the rendezvous store
  int master_port = 0;
  bool launcher_store = false;  ///< the launcher hosts the store (torchrun, --nproc): every rank is a client
  int attempt = 0;            ///< torchrun's restart count: keys of a restarted job do not collide
  std::string launcher;       ///< "torchrun", "biaslab train --nproc", "slurm", "environment variables" or ""

  bool distributed() const { return world_size > 1; }
};

using GetEnv = std::function<const char*(const char*)>;

/// Reads the job from the environment (`getenv` for tests). ConfigError naming the
/// variable when one is malformed, out of range or missing (MASTER_ADDR for Slurm).
DistEnv read_dist_env(const GetEnv& getenv);
DistEnv read_dist_env();

}  // namespace biaslab::dist
