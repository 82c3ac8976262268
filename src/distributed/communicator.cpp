#include "distributed/communicator.h"

#include <torch/torch.h>

#include <csignal>
#include <cstdlib>

#include "core/errors.h"
#include "core/torch_compat.h"
#include "distributed/torch_compat_c10d.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef BIASLAB_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace biaslab::dist {

bool nccl_available() {
#ifdef BIASLAB_WITH_NCCL
  return true;
#else
  return false;
#endif
}

std::string resolve_backend(const std::string& configured, c10::Device device) {
  const std::string backend = configured == "auto" ? (device.is_cuda() ? "nccl" : "gloo") : configured;
  if (backend == "nccl" && !device.is_cuda())
    throw ConfigError("runtime.dist_backend: nccl needs CUDA devices, runtime.device resolved to " + device.str() +
                      "; use gloo (or auto) on the CPU");
  if (backend == "nccl" && !nccl_available())
    throw ConfigError("runtime.dist_backend: nccl is not available in this build (LibTorch " +
                      compat::torch_version() + " without CUDA/NCCL); use gloo");
  if (backend != "gloo" && backend != "nccl")
    throw ConfigError("runtime.dist_backend: '" + configured + "' is not one of auto, gloo, nccl");
  return backend;
}

namespace {

// Tensors packed into flat buffers of one dtype and device, each of about `cap` bytes
// (at least one tensor), walking `order`.
struct Pack {
  torch::Tensor flat;
  std::vector<size_t> members;
};

std::vector<Pack> plan_packs(const std::vector<torch::Tensor>& tensors, const std::vector<size_t>& order,
                             int64_t cap) {
  std::vector<Pack> packs;
  int64_t bytes = 0;
  for (size_t k : order) {
    const auto& t = tensors[k];
    const int64_t size = t.numel() * int64_t(t.element_size());
    const bool fits = !packs.empty() && bytes + size <= cap &&
                      tensors[packs.back().members.front()].scalar_type() == t.scalar_type() &&
                      tensors[packs.back().members.front()].device() == t.device();
    if (!fits) {
      packs.emplace_back();
      bytes = 0;
    }
    packs.back().members.push_back(k);
    bytes += size;
  }
  return packs;
}

// The pack's members as one flat buffer on `device` (`values(k)` gives member k's tensor).
template <class Values>
torch::Tensor flatten(const Pack& p, Values values, c10::Device device) {
  std::vector<torch::Tensor> pieces;
  for (size_t k : p.members) pieces.push_back(values(k).reshape(-1).to(device));
  return torch::cat(pieces);
}

// Copies the slices of `flat` back into the pack's members (`values(k)`, any layout).
template <class Values>
void unflatten(const torch::Tensor& flat, const Pack& p, Values values) {
  int64_t offset = 0;
  for (size_t k : p.members) {
    torch::Tensor target = values(k);
    target.copy_(flat.narrow(0, offset, target.numel()).view(target.sizes()));
    offset += target.numel();
  }
}

// Options of a TCPStore at `port` (0: a free one) waiting `timeout` for keys and peers.
c10d::TCPStoreOptions store_options(int port, bool server, int world_size, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions o;
  o.port = uint16_t(port);
  o.isServer = server;
  o.numWorkers = world_size;
  o.waitWorkers = false;
  o.timeout = timeout;
  return o;
}

}  // namespace

struct Communicator::Impl {
  DistEnv env;
  std::string backend;
  c10::Device device{c10::kCPU};
  std::chrono::milliseconds timeout{0};
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<compat::CommBackend> group;

  [[noreturn]] void fail(const std::string& what, const std::string& why) const {
    throw DistError(fmt::format(
        "rank {} of {}: {} failed ({}): another rank stopped (see its output) or did not answer within "
        "runtime.dist_timeout_s = {:.0f} s",
        env.rank, env.world_size, what, why, std::chrono::duration<double>(timeout).count()));
  }
  template <class F>
  auto guarded(const std::string& what, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const DistError&) {
      throw;
    } catch (const std::exception& e) {
      fail(what, compat::error_message(e));
    }
  }
  void wait(c10::intrusive_ptr<c10d::Work>& work) { work->wait(timeout); }
};

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

std::unique_ptr<Communicator> Communicator::join(const DistEnv& env, const std::string& backend, c10::Device device,
                                                 std::chrono::milliseconds timeout) {
  auto impl = std::make_unique<Impl>();
  impl->env = env;
  impl->backend = backend;
  impl->device = backend == "nccl" ? device : c10::Device(c10::kCPU);
  impl->timeout = timeout;
  const std::string where = fmt::format("rendezvous with {} rank(s) at {}:{}{}", env.world_size, env.master_addr,
                                        env.master_port, env.launcher_store ? " (the launcher's store)" : "");
  // A peer that dies mid-collective closes its sockets; a later send() to it would raise
  // SIGPIPE and end this rank silently (exit 141). Ignored, the send fails with EPIPE and
  // surfaces as the collective's error below ("another rank stopped", exit 7).
  std::signal(SIGPIPE, SIG_IGN);
  impl->guarded(where, [&] {
    auto tcp = c10::make_intrusive<c10d::TCPStore>(
        env.master_addr, store_options(env.master_port, !env.launcher_store && env.rank == 0, env.world_size, timeout));
    impl->store = c10::make_intrusive<c10d::PrefixStore>("biaslab/attempt_" + std::to_string(env.attempt), tcp);
    if (backend == "gloo") {
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
      options->devices.push_back(ifname && *ifname ? c10d::ProcessGroupGloo::createDeviceForInterface(ifname)
                                                   : c10d::ProcessGroupGloo::createDefaultDevice());
      impl->group = c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, env.rank, env.world_size, options);
    } else {
#ifdef BIASLAB_WITH_NCCL
      // Collectives wait with the timeout and throw, rather than NCCL's watchdog aborting
      // the process; each rank's communicator lives on its own GPU.
      ::setenv("TORCH_NCCL_BLOCKING_WAIT", "1", 0);
      ::setenv("NCCL_BLOCKING_WAIT", "1", 0);
      c10::cuda::set_device(device.index());
      impl->group = c10::make_intrusive<c10d::ProcessGroupNCCL>(impl->store, env.rank, env.world_size,
                                                                compat::nccl_options(timeout));
#else
      throw ConfigError("runtime.dist_backend: nccl is not available in this build");
#endif
    }
  });
  std::unique_ptr<Communicator> comm(new Communicator(std::move(impl)));
  // A first collective: every rank is there (Gloo connects lazily on some versions).
  comm->sum({1.0}, where);
  return comm;
}

int Communicator::rank() const { return impl_->env.rank; }
int Communicator::world_size() const { return impl_->env.world_size; }
const std::string& Communicator::backend() const { return impl_->backend; }

void Communicator::broadcast(const std::vector<torch::Tensor>& tensors, const std::string& what) {
  torch::NoGradGuard no_grad;
  std::vector<size_t> order(tensors.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  auto packs = plan_packs(tensors, order, kDefaultBucketBytes);
  impl_->guarded("broadcast of " + what, [&] {
    auto tensor = [&](size_t k) { return tensors[k]; };
    for (auto& p : packs) {
      std::vector<torch::Tensor> io{flatten(p, tensor, impl_->device)};
      auto work = impl_->group->broadcast(io);
      impl_->wait(work);
      unflatten(io[0], p, tensor);
    }
  });
}

std::vector<double> Communicator::sum(const std::vector<double>& values, const std::string& what) {
  return impl_->guarded(what, [&] {
    std::vector<torch::Tensor> io{
        torch::tensor(values, torch::TensorOptions().dtype(torch::kDouble)).to(impl_->device)};
    auto work = impl_->group->allreduce(io);
    impl_->wait(work);
    auto host = io[0].cpu();
    return std::vector<double>(host.data_ptr<double>(), host.data_ptr<double>() + host.numel());
  });
}

void Communicator::reduce_gradients(const std::vector<torch::Tensor>& params, double weight, const std::string& what,
                                    int64_t bucket_bytes) {
  torch::NoGradGuard no_grad;
  // Last parameters first: backward produces their gradients first (the order DDP uses).
  // A parameter without a gradient (unused by this model configuration: the same on every
  // rank) keeps none, as in a single process, so the optimizer leaves it alone.
  std::vector<size_t> order;
  for (size_t k = params.size(); k-- > 0;)
    if (params[k].grad().defined()) order.push_back(k);
  auto packs = plan_packs(params, order, bucket_bytes);
  impl_->guarded(what, [&] {
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    std::vector<std::vector<torch::Tensor>> ios;
    ios.reserve(packs.size());
    auto grad = [&](size_t k) { return params[k].grad(); };
    for (auto& p : packs) {
      p.flat = flatten(p, grad, params[p.members.front()].device());
      if (weight != 1.0) p.flat.mul_(weight);
      ios.push_back({p.flat});
      works.push_back(impl_->group->allreduce(ios.back()));  // all buckets in flight at once
    }
    for (size_t b = 0; b < packs.size(); ++b) {
      impl_->wait(works[b]);
      unflatten(packs[b].flat, packs[b], grad);
    }
  });
}

void Communicator::barrier(const std::string& what) { sum({0.0}, what); }

std::string Communicator::share(const std::string& key, const std::string& value) {
  return impl_->guarded("sharing '" + key + "' from rank 0", [&] {
    if (impl_->env.rank == 0) {
      impl_->store->set(key, std::vector<uint8_t>(value.begin(), value.end()));
      return value;
    }
    const auto bytes = impl_->store->get(key);
    return std::string(bytes.begin(), bytes.end());
  });
}

struct StoreServer::Impl {
  c10::intrusive_ptr<c10d::TCPStore> store;
};

StoreServer::StoreServer(int world_size, std::chrono::milliseconds timeout) : impl_(std::make_unique<Impl>()) {
  std::signal(SIGPIPE, SIG_IGN);  // as in join(): a dead rank's socket must not end the launcher
  try {
    // Port 0: a free port, chosen by the kernel.
    impl_->store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", store_options(0, true, world_size, timeout));
  } catch (const std::exception& e) {
    throw DistError("could not start the rendezvous store on 127.0.0.1: " + compat::error_message(e));
  }
}
StoreServer::~StoreServer() = default;
int StoreServer::port() const { return impl_->store->getPort(); }

}  // namespace biaslab::dist
