#include "engine/run_context.h"

#include <torch/cuda.h>

#include <chrono>

#include "core/errors.h"
#include "core/logging.h"
#include "core/runtime.h"
#include "core/text_diff.h"
#include "distributed/communicator.h"
#include "engine/precision.h"

namespace biaslab {

RunContext::RunContext() = default;
RunContext::~RunContext() = default;
RunContext::RunContext(RunContext&&) noexcept = default;
RunContext& RunContext::operator=(RunContext&&) noexcept = default;

bool RunContext::writer() const { return env.rank == 0; }

namespace {

// The device of this process: in a distributed job on CUDA, `auto` and `cuda` mean the
// GPU of the local rank.
c10::Device process_device(const std::string& spec, const dist::DistEnv& env) {
  c10::Device device = select_device(spec);
  if (env.distributed() && device.is_cuda() && (spec == "auto" || spec == "cuda")) {
    const int count = int(torch::cuda::device_count());
    device = c10::Device(c10::kCUDA, c10::DeviceIndex(env.local_rank % std::max(count, 1)));
  }
  return device;
}

}  // namespace

RunContext process_context(const Config& cfg, const std::string& precision_hint) {
  RunContext ctx;
  ctx.device = select_device(cfg.runtime.device);
  ctx.precision = resolve_precision(cfg.train.precision, ctx.device);
  require_precision_device(ctx.precision, ctx.device, precision_hint);
  ctx.threads = set_threads(int(cfg.runtime.threads));
  set_kernel_mode(cfg.runtime.kernels);
  return ctx;
}

RunContext training_context(const Config& cfg) {
  RunContext ctx;
  ctx.env = dist::read_dist_env();
  ctx.device = process_device(cfg.runtime.device, ctx.env);
  ctx.precision = resolve_precision(cfg.train.precision, ctx.device);
  require_precision_device(ctx.precision, ctx.device, "use bf16 on the CPU");
  if (ctx.env.distributed()) {
    ctx.backend = dist::resolve_backend(cfg.runtime.dist_backend, ctx.device);
    if (cfg.train.batch_size < ctx.env.world_size)
      throw ConfigError(fmt::format("train.batch_size: {} is the global batch, split across the {} ranks; it must "
                                    "be at least {}",
                                    cfg.train.batch_size, ctx.env.world_size, ctx.env.world_size));
    set_log_rank(ctx.env.rank);
  }
  ctx.threads = set_threads(int(cfg.runtime.threads), ctx.env.local_world_size);
  set_kernel_mode(cfg.runtime.kernels);
  seed_everything(uint64_t(cfg.runtime.seed));
  return ctx;
}

RunContext evaluation_context(const Config& cfg, const std::string& recorded) {
  RunContext ctx;
  ctx.device = select_device(cfg.runtime.device);
  ctx.threads = set_threads(int(cfg.runtime.threads));
  set_kernel_mode(cfg.runtime.kernels);
  ctx.precision = resolve_precision(cfg.train.precision, ctx.device);
  if (cfg.train.precision == "auto" && !recorded.empty()) ctx.precision = recorded;
  require_precision_device(ctx.precision, ctx.device, "evaluate with --set train.precision=fp32 (or bf16)");
  return ctx;
}

void join_ranks(RunContext& ctx, const Config& cfg) {
  if (!ctx.env.distributed()) return;
  ctx.comm =
      dist::Communicator::join(ctx.env, ctx.backend, ctx.device, std::chrono::seconds(cfg.runtime.dist_timeout_s));
  if (ctx.env.rank == 0)
    spdlog::info("distributed: {} ranks ({} per node), backend {}, launched by {}; global batch {} = {} per rank",
                 ctx.env.world_size, ctx.env.local_world_size, ctx.backend, ctx.env.launcher, cfg.train.batch_size,
                 fmt::format("{:.4g}", double(cfg.train.batch_size) / ctx.env.world_size));
}

void require_same_experiment(RunContext& ctx, const std::string& experiment) {
  if (!ctx.comm) return;
  const std::string reference = ctx.comm->share("experiment", experiment);
  const bool differs = experiment != reference;
  if (differs)
    spdlog::error("rank {} would train another experiment than rank 0 ({}); launch every rank with the same "
                  "command, config, presets and data",
                  ctx.comm->rank(), describe_difference(first_line_difference(reference, experiment), "rank 0", "this rank"));
  const double differing = ctx.comm->sum({differs ? 1.0 : 0.0}, "comparing the ranks' experiments")[0];
  if (differing > 0)
    throw ConfigError(
        fmt::format("{} rank(s) would train another experiment than rank 0 (see their errors)", differing));
}

}  // namespace biaslab
