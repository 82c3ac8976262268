// Distributed training pieces: the launcher environment, the --nproc command line, and
// the c10d communicator with two Gloo ranks as threads of this process.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <csignal>
#include <map>
#include <thread>

#include "core/errors.h"
#include "core/runtime.h"
#include "distributed/communicator.h"
#include "distributed/env.h"
#include "distributed/launch.h"
#include "test_util.h"

using namespace biaslab;
using namespace biaslab::dist;
using biaslab::test::on_two_ranks;

namespace {

DistEnv env_of(const std::map<std::string, std::string>& vars) {
  return read_dist_env([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

std::string config_error(const std::map<std::string, std::string>& vars) {
  try {
    env_of(vars);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(DistEnv, NoLauncherIsAJobOfOne) {
  const DistEnv env = env_of({});
  EXPECT_FALSE(env.distributed());
  EXPECT_EQ(env.rank, 0);
  EXPECT_EQ(env.world_size, 1);
  EXPECT_FALSE(env_of({{"WORLD_SIZE", "1"}, {"RANK", "0"}}).distributed());
  // A batch script's shell sees the allocation's Slurm variables but is no srun task.
  EXPECT_FALSE(env_of({{"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "0"}}).distributed());
}

TEST(DistEnv, TorchrunVariables) {
  const DistEnv env = env_of({{"WORLD_SIZE", "4"}, {"RANK", "3"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                              {"MASTER_ADDR", "node7"}, {"MASTER_PORT", "29501"},
                              {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"TORCHELASTIC_RESTART_COUNT", "2"},
                              {"TORCHELASTIC_RUN_ID", "none"}});
  EXPECT_TRUE(env.distributed());
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.world_size, 4);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 2);
  EXPECT_EQ(env.master_addr, "node7");
  EXPECT_EQ(env.master_port, 29501);
  EXPECT_TRUE(env.launcher_store);
  EXPECT_EQ(env.attempt, 2);
  EXPECT_EQ(env.launcher, "torchrun");
  // Hand-set variables: the node is the whole job, rank 0 hosts the store.
  const DistEnv manual =
      env_of({{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}});
  EXPECT_EQ(manual.local_rank, 1);
  EXPECT_EQ(manual.local_world_size, 2);
  EXPECT_FALSE(manual.launcher_store);
  EXPECT_EQ(manual.launcher, "environment variables");
}

TEST(DistEnv, SlurmVariables) {
  const DistEnv env = env_of({{"SLURM_NTASKS", "8"}, {"SLURM_PROCID", "5"}, {"SLURM_LOCALID", "1"},
                              {"SLURM_STEP_ID", "0"}, {"SLURM_TASKS_PER_NODE", "4(x2)"}, {"MASTER_ADDR", "n1"}});
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 4);
  EXPECT_EQ(env.master_port, 29500);
  EXPECT_EQ(env.launcher, "slurm");
  EXPECT_FALSE(env.launcher_store);
}

TEST(DistEnv, BadVariablesNameTheVariable) {
  const std::map<std::string, std::string> ok{
      {"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}};
  auto with = [&](const std::string& k, const std::string& v) {
    auto m = ok;
    if (v.empty())
      m.erase(k);
    else
      m[k] = v;
    return config_error(m);
  };
  EXPECT_EQ(config_error(ok), "");
  EXPECT_NE(with("RANK", "2").find("RANK='2' is not an integer in [0, 1]"), std::string::npos) << with("RANK", "2");
  EXPECT_NE(with("RANK", "x").find("RANK='x'"), std::string::npos);
  EXPECT_NE(with("RANK", "").find("sets no RANK"), std::string::npos);
  EXPECT_NE(with("WORLD_SIZE", "0").find("WORLD_SIZE='0'"), std::string::npos);
  EXPECT_NE(with("MASTER_ADDR", "").find("MASTER_ADDR"), std::string::npos);
  EXPECT_NE(with("MASTER_PORT", "70000").find("MASTER_PORT='70000'"), std::string::npos);
  EXPECT_NE(with("LOCAL_RANK", "5").find("LOCAL_RANK='5'"), std::string::npos);
  const std::string slurm =
      config_error({{"SLURM_NTASKS", "2"}, {"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "0"}});
  EXPECT_NE(slurm.find("needs MASTER_ADDR"), std::string::npos) << slurm;
}

TEST(DistLaunch, RankCommandLineDropsNproc) {
  EXPECT_EQ(without_nproc({"biaslab", "train", "--nproc", "2", "-c", "a.yaml", "--nproc=3", "--out", "r"}),
            (std::vector<std::string>{"biaslab", "train", "-c", "a.yaml", "--out", "r"}));
}

TEST(DistBackend, ResolvesAndRejects) {
  EXPECT_EQ(resolve_backend("auto", c10::Device(c10::kCPU)), "gloo");
  EXPECT_EQ(resolve_backend("gloo", c10::Device(c10::kCPU)), "gloo");
  EXPECT_THROW(resolve_backend("nccl", c10::Device(c10::kCPU)), ConfigError);
  EXPECT_THROW(resolve_backend("mpi", c10::Device(c10::kCPU)), ConfigError);
}

TEST(Runtime, AutoThreadsShareTheCoresAmongRanks) {
  const int all = set_threads(0, 1);
  EXPECT_EQ(set_threads(0, 2), std::max(1, all / 2));
  EXPECT_EQ(set_threads(0, 1000), 1);
  EXPECT_EQ(set_threads(3, 2), 3);
  set_threads(all);
}

TEST(Communicator, SumBroadcastShare) {
  on_two_ranks([](int rank, Communicator& comm) {
    EXPECT_EQ(comm.rank(), rank);
    EXPECT_EQ(comm.world_size(), 2);
    const auto s = comm.sum({double(rank + 1), 0.5, 1e-17}, "test sum");
    EXPECT_EQ(s, (std::vector<double>{3.0, 1.0, 2e-17}));
    // Mixed dtypes and a non-contiguous (channels-last) tensor come back as rank 0's.
    auto w = torch::full({2, 3, 2, 2}, float(rank + 1)).contiguous(at::MemoryFormat::ChannelsLast);
    w.select(1, 2).fill_(float(10 * rank + 7));
    auto count = torch::full({1}, int64_t(100 + rank));
    comm.broadcast({w, count}, "test tensors");
    auto expected = torch::full({2, 3, 2, 2}, 1.0f);
    expected.select(1, 2).fill_(7.0f);
    EXPECT_TRUE(torch::equal(w, expected)) << "rank " << rank;
    EXPECT_EQ(count.item<int64_t>(), 100);
    EXPECT_EQ(comm.share("plan", rank == 0 ? "from rank 0" : "ignored"), "from rank 0");
  });
}

TEST(Communicator, ReducesGradientsInBucketsWithWeights) {
  for (int64_t bucket : {int64_t(16), kDefaultBucketBytes}) {  // many buckets, one bucket
    on_two_ranks([bucket](int rank, Communicator& comm) {
      std::vector<torch::Tensor> params;
      for (int64_t n : {3, 5, 1, 4}) params.push_back(torch::zeros({n}, torch::requires_grad()));
      // Gradients 1, 2, 3, 4 (x rank + 1); the third is unused on both ranks.
      for (size_t k = 0; k < params.size(); ++k)
        if (k != 2) params[k].mutable_grad() = torch::full_like(params[k], double((k + 1) * (rank + 1)));
      // Shards of 1 and 3 samples: weights 1/4 and 3/4.
      comm.reduce_gradients(params, rank == 0 ? 0.25 : 0.75, "test gradients", bucket);
      EXPECT_FALSE(params[2].grad().defined()) << "an unused parameter gets no gradient";
      for (size_t k : {0, 1, 3}) {
        const double want = double(k + 1) * (0.25 * 1 + 0.75 * 2);
        EXPECT_TRUE(torch::allclose(params[k].grad(), torch::full_like(params[k], want))) << "param " << k;
      }
    });
  }
}

TEST(Communicator, AMissingRankIsAnErrorNotAHang) {
  const auto start = std::chrono::steady_clock::now();
  std::string message;
  on_two_ranks(
      [&](int rank, Communicator& comm) {
        if (rank == 1) return;  // joins, then never takes part again
        try {
          comm.sum({1.0}, "step statistics at step 3");
        } catch (const DistError& e) {
          message = e.what();
        }
      },
      std::chrono::seconds(5));
  EXPECT_NE(message.find("rank 0 of 2: step statistics at step 3 failed"), std::string::npos) << message;
  EXPECT_NE(message.find("runtime.dist_timeout_s"), std::string::npos) << message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(Communicator, ARankIgnoresSigpipe) {
  // A peer that died leaves a closed socket: writing to it must fail as an error of the
  // collective (exit 7 with a message), not kill the rank with SIGPIPE (exit 141).
  std::signal(SIGPIPE, SIG_DFL);
  on_two_ranks([](int, Communicator&) {});
  struct sigaction now {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_IGN);
}
