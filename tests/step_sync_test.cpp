// The Trainer's step synchronisation: one process passes its statistics through and
// stops on its own signal; two data-parallel ranks (threads of this process) weight
// their gradients by their share of the global batch, combine the step's statistics
// with rank 0's gradient norm, draw per-rank reproducible seeds and evaluate rank 0's
// running statistics.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <csignal>

#include "core/signals.h"
#include "data/loader.h"
#include "distributed/communicator.h"
#include "engine/step_sync.h"
#include "test_util.h"

using namespace biaslab;

namespace {

std::unique_ptr<Loader> loader_of(int64_t samples, int64_t batch) {
  LoaderOptions options;
  options.batch_size = batch;
  return std::make_unique<Loader>(
      Split{torch::zeros({samples, 1, 2, 2}, torch::kUInt8), torch::zeros({samples}, torch::kLong)}, options);
}

}  // namespace

TEST(StepSync, OneProcessPassesThroughAndStopsOnItsOwnSignal) {
  auto sync = local_step_sync();
  StepOptions options;
  sync->begin_step(0, 0, 4, options);
  EXPECT_FALSE(options.reduce_gradients);
  const SyncedStats s = sync->end_step(0, StepStats{0.5, 2.0, 3}, 4);
  EXPECT_EQ(s.loss, 0.5);
  EXPECT_EQ(s.grad_norm, 2.0);
  EXPECT_EQ(s.correct, 3);
  EXPECT_EQ(s.n, 4);
  EXPECT_TRUE(sync->leads());
  EXPECT_EQ(sync->communicator(), nullptr);

  reset_stop_signal();
  EXPECT_EQ(sync->stop_after_step(), 0);
  install_stop_handlers();
  std::raise(SIGTERM);
  EXPECT_EQ(sync->stop_after_step(), SIGTERM);
  EXPECT_EQ(sync->stop_after_evaluation(), SIGTERM);
  reset_stop_signal();
}

TEST(StepSync, DataParallelRanksAgreeOnTheGlobalBatch) {
  reset_stop_signal();
  const auto train = loader_of(7, 4);  // global batches of 4 and 3 samples
  test::on_two_ranks([&](int rank, dist::Communicator& comm) {
    auto sync = data_parallel_step_sync(comm, *train);
    sync->set_seed(5);
    EXPECT_EQ(sync->leads(), rank == 0);
    EXPECT_EQ(sync->communicator(), &comm);
    const int64_t n = rank == 0 ? 2 : 1;  // batch 1 (3 samples) in shards of 2 and 1

    // The ranks share this process's generator: they seed and draw in turns.
    StepOptions options;
    torch::Tensor draws[2];
    for (auto& draw : draws)
      for (int turn = 0; turn < 2; ++turn) {
        if (turn == rank) {
          sync->begin_step(/*steps_done=*/6, /*batch_index=*/1, n, options);
          draw = torch::rand({4});
        }
        comm.barrier("taking turns");
      }
    EXPECT_TRUE(torch::equal(draws[0], draws[1])) << "(seed, step, rank) decides the draws";
    auto rank0_draw = draws[0].clone();
    comm.broadcast({rank0_draw}, "rank 0's draws");
    if (rank == 1) {
      EXPECT_FALSE(torch::equal(rank0_draw, draws[0])) << "each rank draws its own masks";
    }

    // Gradients weighted by the shard's share: 2/3 x 1 + 1/3 x 2.
    ASSERT_TRUE(options.reduce_gradients);
    auto p = torch::zeros({2}, torch::requires_grad());
    p.mutable_grad() = torch::full({2}, double(rank + 1));
    options.reduce_gradients({p});
    EXPECT_TRUE(torch::allclose(p.grad(), torch::full({2}, 4.0 / 3.0))) << p.grad();

    // The global batch's mean loss and counts, rank 0's gradient norm, no stop.
    const SyncedStats s =
        sync->end_step(6, rank == 0 ? StepStats{1.0, 3.0, 2} : StepStats{4.0, 99.0, 0}, n);
    EXPECT_DOUBLE_EQ(s.loss, 2.0);
    EXPECT_EQ(s.grad_norm, 3.0);
    EXPECT_EQ(s.correct, 2);
    EXPECT_EQ(s.n, 3);
    EXPECT_EQ(sync->stop_after_step(), 0);
    EXPECT_EQ(sync->stop_after_evaluation(), 0);

    // Running statistics evaluated are rank 0's.
    auto running = torch::full({3}, float(rank + 1));
    sync->before_evaluation({running}, 1);
    sync->before_evaluation({}, 2);
    EXPECT_TRUE(torch::equal(running, torch::full({3}, 1.0f)));
    sync->before_stopping(7);
  });
}
