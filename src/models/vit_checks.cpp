#include "models/model_checks.h"

namespace biaslab {

namespace {

// The patch projection must tile the map it sees: the image, or the CNN trunk's output.
void check_token_grid(const ModelConfig& m, const DataConfig& d, const ConfigChecker& k) {
  int64_t side = d.image_size;
  std::string from =
      "the image size " + std::to_string(d.image_size) + " (data.image_size, " + k.where("data.image_size") + ")";
  if (m.family == "hybrid") {
    int64_t halvings = m.tokenizer == "conv" ? int64_t(m.widths.size())
                                             : int64_t(m.layers.size()) - 1 + (m.stem == "imagenet" ? 2 : 0);
    for (int64_t i = 0; i < halvings; ++i) side = (side + 1) / 2;
    from = "the " + std::to_string(side) + "x" + std::to_string(side) + " feature map the " + m.tokenizer +
           " tokenizer makes of " + std::to_string(d.image_size) + " px images";
  }
  k.require(side % m.patch_size == 0, "model.patch_size",
            "patch size " + std::to_string(m.patch_size) + " does not divide " + from + "; choose a divisor of " +
                std::to_string(side) + (m.family == "vit" ? " or change data.image_size" : ""));
}

}  // namespace

void check_vit_config(const ModelConfig& m, const DataConfig& d, const ConfigChecker& k) {
  check_token_grid(m, d, k);
  k.require(m.pos_embed != "sincos2d" || m.embed_dim % 4 == 0, "model.pos_embed",
            "sincos2d needs embed_dim divisible by 4, got " + std::to_string(m.embed_dim));
  k.require(m.attn_window == 0 || m.attn_window % 2 == 1, "model.attn_window",
            "expected 0 (global attention) or an odd window size, got " + std::to_string(m.attn_window));
  k.require(m.embed_dim % m.num_heads == 0, "model.num_heads",
            "embed_dim " + std::to_string(m.embed_dim) + " (" + k.where("model.embed_dim") +
                ") is not divisible by num_heads " + std::to_string(m.num_heads));
  k.require(m.gpsa_layers <= m.depth, "model.gpsa_layers",
            "expected at most model.depth = " + std::to_string(m.depth) + " GPSA blocks, got " +
                std::to_string(m.gpsa_layers));
  k.require(m.gpsa_layers == 0 || (m.attn_window == 0 && m.pos_embed != "relative"), "model.gpsa_layers",
            "gated positional self-attention brings its own positional attention; it cannot be combined with "
            "model.attn_window or model.pos_embed: relative");
  k.require(!m.rezero || m.layer_scale_init == 0.0, "model.rezero",
            "choose one residual gain: ReZero (a scalar from 0) or LayerScale (model.layer_scale_init), not both");
}

}  // namespace biaslab
