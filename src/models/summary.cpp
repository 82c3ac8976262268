#include "models/summary.h"

#include <torch/torch.h>

#include "core/flop_counter.h"
#include "core/runtime.h"
#include "layers/attention.h"

namespace biaslab {
namespace {

bool owns(const std::string& prefix, const std::string& name) {
  return name == prefix || (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
                            name[prefix.size()] == '.');
}

// Receptive-field state carried from stage to stage.
struct Field {
  int64_t size = 1, jump = 1;
  bool global = false;
  void apply(int64_t kernel, int64_t stride, int64_t dilation = 1) {
    size += (kernel - 1) * dilation * jump;
    jump *= stride;
  }
};

void walk(const torch::nn::Module& model, const std::vector<std::string>& prefixes, Field& field) {
  const auto modules = model.named_modules("", /*include_self=*/false);
  for (const auto& prefix : prefixes) {
    for (const auto& item : modules) {
      const std::string& name = item.key();
      if (!owns(prefix, name) || name.find("downsample") != std::string::npos) continue;
      const auto& m = item.value();
      if (const auto* conv = m->as<torch::nn::Conv2dImpl>()) {
        const auto& o = conv->options;
        field.apply((*o.kernel_size())[0], (*o.stride())[0], (*o.dilation())[0]);
      } else if (const auto* pool = m->as<torch::nn::MaxPool2dImpl>()) {
        field.apply((*pool->options.kernel_size())[0], (*pool->options.stride())[0]);
      } else if (const auto* attn = m->as<AttentionImpl>()) {
        if (attn->options.window() > 0 && !attn->options.gated_positional()) field.apply(attn->options.window(), 1);
        else field.global = true;
      }
    }
  }
}

}  // namespace

ModelSummary summarize(Classifier& model, int64_t channels, int64_t image_size) {
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;
  ModelSummary summary;
  auto params = model.named_parameters();
  std::vector<bool> claimed(params.size(), false);
  Field field;
  // A generator of its own: summarizing (e.g. for summary.json at the start of training)
  // must not disturb the global RNG a run was seeded with.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(0);
  auto x = torch::randn({1, channels, image_size, image_size}, gen);
  // The reference kernels, so that every product is an operator the counter sees (a
  // fused kernel's are inside it).
  const KernelModeScope reference(KernelMode::Reference);
  for (const auto& stage : model.stages()) {
    StageSummary s;
    s.name = stage.name;
    {
      FlopCounter counter;
      x = stage.forward(x);
      s.macs = counter.macs();
    }
    s.output_shape = x.sizes().slice(1).vec();
    for (size_t i = 0; i < params.size(); ++i) {
      if (claimed[i]) continue;
      for (const auto& prefix : stage.modules) {
        if (owns(prefix, params[i].key())) {
          s.parameters += params[i].value().numel();
          claimed[i] = true;
          break;
        }
      }
    }
    walk(model, stage.modules, field);
    if (s.output_shape.size() == 1) field.global = true;  // pooled to a vector
    s.receptive_field = field.global ? StageSummary::kGlobal : field.size;
    summary.parameters += s.parameters;
    summary.macs += s.macs;
    summary.stages.push_back(std::move(s));
  }
  model.train(was_training);
  return summary;
}

}  // namespace biaslab
