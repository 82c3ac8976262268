#include "models/registry.h"

#include <functional>
#include <map>

#include "config/suggest.h"
#include "core/errors.h"
#include "layers/conv_tokenizer.h"
#include "models/resnet.h"
#include "models/vit.h"

namespace biaslab {
namespace {

using Builder = std::function<ClassifierPtr(const ModelConfig&, const InputSpec&)>;

// The ResNet keys, for a classifier or (num_classes 0) a hybrid's tokenizer trunk.
ResNetOptions resnet_options(const ModelConfig& m, const InputSpec& in, int64_t num_classes, const std::string& norm) {
  return ResNetOptions(num_classes)
      .in_chans(in.channels)
      .stem(m.stem)
      .block(m.block)
      .layers(m.layers)
      .widths(m.widths)
      .zero_init_residual(m.zero_init_residual)
      .norm(norm)
      .residual(m.residual);
}

ClassifierPtr build_resnet(const ModelConfig& m, const InputSpec& in) {
  return std::make_shared<ResNetImpl>(resnet_options(m, in, in.num_classes, m.norm.empty() ? "batchnorm" : m.norm));
}

ViTOptions vit_options(const ModelConfig& m, const InputSpec& in) {
  return ViTOptions(in.image_size, m.patch_size, in.num_classes)
      .in_chans(in.channels)
      .embed_dim(m.embed_dim)
      .depth(m.depth)
      .num_heads(m.num_heads)
      .mlp_ratio(m.mlp_ratio)
      .qkv_bias(m.qkv_bias)
      .drop_rate(m.drop_rate)
      .attn_drop_rate(m.attn_drop_rate)
      .pool(m.pool)
      .norm(m.norm.empty() ? "layernorm" : m.norm)
      .norm_placement(m.norm_placement)
      .pos_embed(m.pos_embed)
      .drop_path_rate(m.drop_path_rate)
      .layer_scale_init(m.layer_scale_init)
      .attn_window(m.attn_window)
      .gpsa_layers(m.gpsa_layers)
      .locality_strength(m.locality_strength)
      .attn_scale_by_sqrt_dk(m.attn_scale == "sqrt_dk")
      .attn_temperature(m.attn_temperature)
      .rezero(m.rezero)
      .residual_in_autocast(m.residual_stream == "autocast")
      .residual(m.residual);
}

ClassifierPtr build_vit(const ModelConfig& m, const InputSpec& in) {
  return std::make_shared<ViTImpl>(vit_options(m, in));
}

// The ViT with a CNN tokenizer in front of its patch projection.
ClassifierPtr build_hybrid(const ModelConfig& m, const InputSpec& in) {
  auto options = vit_options(m, in);
  if (m.tokenizer == "conv") {
    ConvTokenizer cnn(ConvTokenizerOptions(in.channels, m.widths).kernel_size(m.tokenizer_kernel));
    options.backbone(torch::nn::AnyModule(cnn))
        .backbone_size(cnn->feature_size(in.image_size))
        .backbone_channels(cnn->num_features());
  } else {
    auto cnn = std::make_shared<ResNetImpl>(resnet_options(m, in, 0, m.cnn_norm).global_pool(false));
    options.backbone(torch::nn::AnyModule(cnn))
        .backbone_size(cnn->feature_size(in.image_size))
        .backbone_channels(cnn->num_features());
  }
  return std::make_shared<ViTImpl>(options);
}

// Explicit table (self-registering statics are dropped when linking a static library).
const std::map<std::string, Builder>& registry() {
  static const std::map<std::string, Builder> table = {
      {"hybrid", build_hybrid},
      {"resnet", build_resnet},
      {"vit", build_vit},
  };
  return table;
}

}  // namespace

InputSpec input_spec(const DataConfig& d) { return {d.channels, d.image_size, d.num_classes}; }

ClassifierPtr build_model(const ModelConfig& cfg, const InputSpec& input) {
  auto it = registry().find(cfg.family);
  if (it == registry().end())
    throw ConfigError("model.family: unknown family '" + cfg.family + "'" + did_you_mean(cfg.family, model_families()) +
                      "; expected one of: " + join(model_families()));
  return it->second(cfg, input);
}

std::vector<std::string> model_families() {
  std::vector<std::string> names;
  for (const auto& [name, builder] : registry()) names.push_back(name);
  return names;
}

int64_t count_parameters(const torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters()) n += p.numel();
  return n;
}

}  // namespace biaslab
