#pragma once
// Data-parallel communication on PyTorch's c10d: a process group (Gloo on the CPU, NCCL
// on CUDA) joined through a TCPStore rendezvous, and the few collectives training needs.
// The c10d headers stay inside communicator.cpp.
#include <c10/core/Device.h>
#include <torch/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "distributed/env.h"

namespace biaslab::dist {

/// runtime.dist_backend for `device`: auto = nccl on CUDA, gloo on the CPU. ConfigError
/// when the choice cannot work here (nccl on the CPU or without NCCL in this LibTorch).
std::string resolve_backend(const std::string& configured, c10::Device device);

/// Whether this build can use NCCL (a CUDA LibTorch with c10d's NCCL backend).
bool nccl_available();

/// PyTorch DDP's default gradient bucket size.
constexpr int64_t kDefaultBucketBytes = 25 * 1024 * 1024;

class Communicator {
 public:
  /// Joins the job `env` describes: rank 0 hosts the rendezvous store unless the
  /// launcher does; every collective fails with DistError after `timeout` (or as soon as
  /// a peer's connection drops).
  static std::unique_ptr<Communicator> join(const DistEnv& env, const std::string& backend, c10::Device device,
                                            std::chrono::milliseconds timeout);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int world_size() const;
  const std::string& backend() const;

  /// Overwrites `tensors` (same shapes on every rank) with rank 0's values.
  void broadcast(const std::vector<torch::Tensor>& tensors, const std::string& what);
  /// Element-wise sum over ranks, in float64.
  std::vector<double> sum(const std::vector<double>& values, const std::string& what);
  /// Gradient of the global batch from each rank's gradient of its shard: every rank
  /// scales its gradients by `weight` (its share of the global batch) and the sums are
  /// all-reduced in buckets of about `bucket_bytes`, all in flight at once. Parameters
  /// without a gradient are left out (they must be the same on every rank: parameters a
  /// model configuration does not use).
  void reduce_gradients(const std::vector<torch::Tensor>& params, double weight, const std::string& what,
                        int64_t bucket_bytes = kDefaultBucketBytes);
  /// Returns once every rank has called it (an all-reduce: a broadcast's sender may
  /// finish before the receivers do).
  void barrier(const std::string& what);
  /// Rank 0's `value` on every rank (through the store; other ranks' `value` is ignored).
  /// Keys are used once.
  std::string share(const std::string& key, const std::string& value);

 private:
  struct Impl;
  explicit Communicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// The rendezvous store of `biaslab train --nproc`, hosted by the launching process on a
/// free port of 127.0.0.1 so that no rank has to outlive the others to serve it.
class StoreServer {
 public:
  StoreServer(int world_size, std::chrono::milliseconds timeout);
  ~StoreServer();
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace biaslab::dist
