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
                                "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::_convolution"};

bool counted(const at::RecordFunction& fn) {
  const char* name = fn.name();
  for (const char* c : kCounted)
    if (std::strcmp(name, c) == 0) return true;
  return false;
}

// MACs of one op from its inputs and output: output elements x reduction length.
int64_t op_macs(const at::RecordFunction& fn) {
  const auto inputs = fn.inputs();
  const auto& outputs = fn.outputs();
  if (outputs.empty() || !outputs[0].isTensor() || inputs.size() < 2) return 0;
  const auto out = outputs[0].toTensor();
  const std::string name = fn.name();
  auto tensor = [&](size_t i) { return inputs[i].isTensor() ? inputs[i].toTensor() : at::Tensor(); };
  if (name == "aten::convolution" || name == "aten::conv2d" || name == "aten::_convolution") {
    const auto w = tensor(1);  // (out, in / groups, k...)
    return w.defined() ? out.numel() * (w.numel() / w.size(0)) : 0;
  }
  if (name == "aten::linear") {
    const auto w = tensor(1);  // (out, in)
    return w.defined() ? out.numel() * w.size(-1) : 0;
  }
  // Products: the reduction length is the last dimension of the first matrix factor.
  const auto a = tensor(name == "aten::addmm" || name == "aten::baddbmm" ? 1 : 0);
  return a.defined() && a.dim() > 0 ? out.numel() * a.size(-1) : 0;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (t_active && counted(fn)) ++t_depth;
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (!t_active || !counted(fn)) return;
  if (--t_depth == 0) t_macs += op_macs(fn);
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
