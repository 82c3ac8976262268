#include "core/flop_counter.h"

#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include <cstring>

namespace biaslab {
namespace {

thread_local int64_t t_macs = 0;
thread_local int t_depth = 0;  // nesting inside counted ops
thread_local bool t_active = false;

const char* const kCounted[] = {"aten::convolution", "aten::conv2d", "aten::linear", "aten::matmul", "aten::mm",
                                "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::_convolution",
                                "aten::scaled_dot_product_attention"};

bool counted(const at::RecordFunction& fn) {
  const char* name = fn.name();
  for (const char* c : kCounted)
    if (std::strcmp(name, c) == 0) return true;
  return false;
}

// The reduction length of an op (MACs per output element), from its inputs. Inputs are
// only valid in the start callback (LibTorch 2.x), outputs only in the end callback, so
// the start callback hands this to the end callback through an ObserverContext.
struct Reduction : at::ObserverContext {
  explicit Reduction(int64_t k) : k(k) {}
  int64_t k;
};

int64_t reduction_length(const at::RecordFunction& fn) {
  const auto inputs = fn.inputs();
  if (inputs.size() < 2) return 0;
  auto tensor = [&](size_t i) { return inputs[i].isTensor() ? inputs[i].toTensor() : at::Tensor(); };
  const std::string name = fn.name();
  if (name == "aten::convolution" || name == "aten::conv2d" || name == "aten::_convolution") {
    const auto w = tensor(1);  // (out, in / groups, k...)
    return w.defined() && w.dim() > 0 && w.size(0) > 0 ? w.numel() / w.size(0) : 0;
  }
  if (name == "aten::linear") {
    const auto w = tensor(1);  // (out, in)
    return w.defined() && w.dim() > 0 ? w.size(-1) : 0;
  }
  if (name == "aten::scaled_dot_product_attention") {
    // q k^T and then the weights times v: 2 x (key count) MACs per output element.
    const auto k = tensor(1);  // (..., M, D)
    return k.defined() && k.dim() >= 2 ? 2 * k.size(-2) : 0;
  }
  // Products: the last dimension of the first matrix factor.
  const auto a = tensor(name == "aten::addmm" || name == "aten::baddbmm" ? 1 : 0);
  return a.defined() && a.dim() > 0 ? a.size(-1) : 0;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (!t_active || !counted(fn)) return nullptr;
  // Only the outermost counted op counts (aten::linear, not the addmm it calls).
  return ++t_depth == 1 ? std::make_unique<Reduction>(reduction_length(fn)) : nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  if (!t_active || !counted(fn)) return;
  --t_depth;
  if (!ctx) return;
  const auto& outputs = fn.outputs();
  if (!outputs.empty() && outputs[0].isTensor()) t_macs += outputs[0].toTensor().numel() * static_cast<Reduction*>(ctx)->k;
}

}  // namespace

struct FlopCounter::State {
  at::CallbackHandle handle = 0;
};

FlopCounter::FlopCounter() : state_(std::make_unique<State>()) {
  TORCH_CHECK(!t_active, "FlopCounter: one counter per thread at a time");
  t_macs = 0;
  t_depth = 0;
  t_active = true;
  state_->handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(on_start, on_end).needsInputs(true).needsOutputs(true).scopes({at::RecordScope::FUNCTION}));
}

FlopCounter::~FlopCounter() {
  at::removeCallback(state_->handle);
  t_active = false;
}

int64_t FlopCounter::macs() const { return t_macs; }

}  // namespace biaslab
