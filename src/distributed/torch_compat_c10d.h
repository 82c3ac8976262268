#pragma once
// c10d differences between LibTorch 1.13 and 2.x; included by distributed/communicator.cpp only
// (the c10d headers need Gloo's and, for NCCL, CUDA's headers).
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#ifdef BIASLAB_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace biaslab::compat {

// The class a communication backend derives from: 1.13's ProcessGroupGloo is a
// ProcessGroup; from 2.0 on it is a Backend, wrapped by a ProcessGroup in Python.
#if TORCH_VERSION_MAJOR >= 2
using CommBackend = c10d::Backend;
#else
using CommBackend = c10d::ProcessGroup;
#endif

#ifdef BIASLAB_WITH_NCCL
// NCCL options: 2.x takes the collective timeout as a field of Backend::Options.
inline c10::intrusive_ptr<c10d::ProcessGroupNCCL::Options> nccl_options(std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return options;
}
#endif

}  // namespace biaslab::compat
