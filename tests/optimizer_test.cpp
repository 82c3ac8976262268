#include <gtest/gtest.h>
#include <torch/torch.h>

#include "engine/optimizer.h"
#include "models/vit.h"

using namespace biaslab;

TEST(Optimizer, NoDecayOnNormsBiasesPositionsAndClassToken) {
  ViTImpl v(ViTOptions(8, 4, 3).embed_dim(8).depth(1).num_heads(2));
  OptimConfig cfg;
  cfg.weight_decay = 0.1;
  auto opt = make_optimizer(v, cfg);
  ASSERT_EQ(opt->param_groups().size(), 2u);
  auto& decay = opt->param_groups()[0];
  auto& no_decay = opt->param_groups()[1];
  EXPECT_DOUBLE_EQ(static_cast<torch::optim::AdamWOptions&>(decay.options()).weight_decay(), 0.1);
  EXPECT_DOUBLE_EQ(static_cast<torch::optim::AdamWOptions&>(no_decay.options()).weight_decay(), 0.0);
  auto contains = [](const torch::optim::OptimizerParamGroup& g, const torch::Tensor& t) {
    for (const auto& p : g.params())
      if (p.is_same(t)) return true;
    return false;
  };
  EXPECT_TRUE(contains(no_decay, v.pos_embed));
  EXPECT_TRUE(contains(no_decay, v.cls_token));
  EXPECT_TRUE(contains(no_decay, v.head->bias));
  EXPECT_TRUE(contains(no_decay, v.named_parameters()["norm.weight"]));
  EXPECT_TRUE(contains(decay, v.head->weight));
  EXPECT_TRUE(contains(decay, v.patch_embed->proj->weight));
  EXPECT_EQ(decay.params().size() + no_decay.params().size(), v.parameters().size());
}

TEST(Optimizer, SgdOptionsAndLearningRate) {
  ViTImpl v(ViTOptions(8, 4, 3).embed_dim(8).depth(1).num_heads(2));
  OptimConfig cfg;
  cfg.name = "sgd";
  cfg.lr = 0.1;
  cfg.momentum = 0.8;
  cfg.nesterov = true;
  auto opt = make_optimizer(v, cfg);
  auto& o = static_cast<torch::optim::SGDOptions&>(opt->param_groups()[0].options());
  EXPECT_DOUBLE_EQ(o.momentum(), 0.8);
  EXPECT_TRUE(o.nesterov());
  set_learning_rate(*opt, 0.025);
  for (auto& g : opt->param_groups()) EXPECT_DOUBLE_EQ(g.options().get_lr(), 0.025);
}

TEST(Optimizer, RelativePositionTablesAreNotDecayed) {
  ViTImpl v(ViTOptions(8, 4, 3).embed_dim(8).depth(1).num_heads(2).pos_embed("relative"));
  const auto params = v.named_parameters();
  ASSERT_NE(params.find("blocks.0.attn.relative_position_bias_table"), nullptr);
  EXPECT_TRUE(exempt_from_weight_decay("blocks.0.attn.relative_position_bias_table",
                                       params["blocks.0.attn.relative_position_bias_table"]));
  EXPECT_FALSE(exempt_from_weight_decay("blocks.0.attn.qkv.weight", params["blocks.0.attn.qkv.weight"]));
}
