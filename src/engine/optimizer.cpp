#include "engine/optimizer.h"

#include <torch/torch.h>

namespace biaslab {
namespace optim = torch::optim;

bool exempt_from_weight_decay(const std::string& name, const torch::Tensor& p) {
  auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return p.dim() <= 1 || ends_with("pos_embed") || ends_with("cls_token") || ends_with("relative_position_bias_table");
}

std::unique_ptr<optim::Optimizer> make_optimizer(const torch::nn::Module& model, const OptimConfig& cfg) {
  std::vector<torch::Tensor> decay, no_decay;
  for (const auto& item : model.named_parameters()) {
    if (!item.value().requires_grad()) continue;
    (exempt_from_weight_decay(item.key(), item.value()) ? no_decay : decay).push_back(item.value());
  }
  std::vector<optim::OptimizerParamGroup> groups;
  if (cfg.name == "sgd") {
    auto base = optim::SGDOptions(cfg.lr).momentum(cfg.momentum).nesterov(cfg.nesterov);
    groups.emplace_back(decay, std::make_unique<optim::SGDOptions>(optim::SGDOptions(base).weight_decay(cfg.weight_decay)));
    groups.emplace_back(no_decay, std::make_unique<optim::SGDOptions>(optim::SGDOptions(base).weight_decay(0.0)));
    return std::make_unique<optim::SGD>(std::move(groups), base);
  }
  TORCH_CHECK(cfg.name == "adamw", "unknown optimizer '", cfg.name, "'");
  auto base = optim::AdamWOptions(cfg.lr).betas({cfg.betas.at(0), cfg.betas.at(1)}).eps(cfg.eps);
  groups.emplace_back(decay, std::make_unique<optim::AdamWOptions>(optim::AdamWOptions(base).weight_decay(cfg.weight_decay)));
  groups.emplace_back(no_decay, std::make_unique<optim::AdamWOptions>(optim::AdamWOptions(base).weight_decay(0.0)));
  return std::make_unique<optim::AdamW>(std::move(groups), base);
}

void set_learning_rate(optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

}  // namespace biaslab
