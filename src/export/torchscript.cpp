#include "export/torchscript.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <cmath>
#include <map>
#include <sstream>
#include <variant>

#include "core/errors.h"
#include "core/torch_compat.h"
#include "layers/attention.h"
#include "layers/conv_tokenizer.h"
#include "layers/drop_path.h"
#include "layers/mlp.h"
#include "layers/norm.h"
#include "layers/patch_embed.h"
#include "layers/transformer_block.h"
#include "models/resnet.h"
#include "models/vit.h"

namespace biaslab {
namespace nn = torch::nn;
namespace {

// A float literal TorchScript reads back as the same double (and as a float, never an int).
std::string lit(double v) {
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "float(\"-inf\")";
  std::ostringstream s;
  s.precision(17);
  s << v;
  std::string out = s.str();
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

std::string ints(std::initializer_list<int64_t> v) {
  std::string out = "[";
  for (auto x : v) out += (out.size() > 1 ? ", " : "") + std::to_string(x);
  return out + "]";
}

// The members of one module, in the order they are registered.
struct Members {
  std::vector<std::pair<std::string, torch::Tensor>> params, buffers;
  std::vector<std::pair<std::string, torch::jit::Module>> modules;
  std::vector<std::tuple<std::string, c10::TypePtr, c10::IValue>> attributes;
};

// Builds jit modules, one class per distinct (kind, code, member layout).
class Builder {
 public:
  torch::jit::Module make(const std::string& kind, const std::string& body, const Members& m) {
    std::string key = kind + "\n" + body;
    for (const auto& [name, t] : m.params) key += "\nP " + name;
    for (const auto& [name, t] : m.buffers) key += "\nB " + name;
    for (const auto& [name, sub] : m.modules) key += "\nM " + name + " " + sub.type()->name()->qualifiedName();
    for (const auto& [name, type, v] : m.attributes) key += "\nA " + name + " " + type->str();
    auto found = types_.find(key);
    const bool fresh = found == types_.end();
    torch::jit::Module out = [&] {
      if (!fresh) return torch::jit::Module(cu_, found->second);
      const int n = counts_[kind]++;
      const std::string name = n == 0 ? kind : kind + "_" + std::to_string(n);
      return torch::jit::Module(c10::QualifiedName("__torch__.biaslab." + name), cu_, /*shouldMangle=*/false);
    }();
    for (const auto& [name, sub] : m.modules) out.register_module(name, sub);
    for (const auto& [name, t] : m.params) out.register_parameter(name, t.detach().clone(), /*is_buffer=*/false);
    for (const auto& [name, t] : m.buffers) out.register_buffer(name, t.detach().clone());
    for (const auto& [name, type, v] : m.attributes) out.register_attribute(name, type, v);
    if (fresh) {
      out.define("def forward(self, x: Tensor) -> Tensor:\n" + body);
      types_.emplace(key, out.type());
    }
    return out;
  }

 private:
  std::shared_ptr<torch::jit::CompilationUnit> cu_ = std::make_shared<torch::jit::CompilationUnit>();
  std::map<std::string, c10::ClassTypePtr> types_;
  std::map<std::string, int> counts_;
};

class Translator {
 public:
  /// `image_size`: the side of the images the root module checks its input against.
  Translator(Builder& b, int64_t image_size) : b_(b), image_size_(image_size) {}

  torch::jit::Module module(const nn::Module& m, const std::string& path) {
    if (auto* p = dynamic_cast<const nn::LinearImpl*>(&m)) return linear(*p);
    if (auto* p = dynamic_cast<const nn::Conv2dImpl*>(&m)) return conv2d(*p, path);
    if (auto* p = dynamic_cast<const nn::BatchNorm2dImpl*>(&m)) return batch_norm(*p);
    if (auto* p = dynamic_cast<const GroupNormFp32Impl*>(&m)) return group_norm(*p);
    if (auto* p = dynamic_cast<const LayerNormFp32Impl*>(&m)) return layer_norm(*p);
    if (auto* p = dynamic_cast<const TokenBatchNormImpl*>(&m)) return token_batch_norm(*p);
    if (auto* p = dynamic_cast<const RMSNormImpl*>(&m)) return rms_norm(*p);
    if (auto* p = dynamic_cast<const LayerScaleImpl*>(&m)) return layer_scale(*p);
    if (auto* p = dynamic_cast<const nn::MaxPool2dImpl*>(&m)) return max_pool(*p, path);
    if (dynamic_cast<const nn::IdentityImpl*>(&m)) return b_.make("Identity", "    return x\n", {});
    if (dynamic_cast<const nn::ReLUImpl*>(&m)) return b_.make("ReLU", "    return torch.relu(x)\n", {});
    if (auto* p = dynamic_cast<const nn::SequentialImpl*>(&m)) return chain("Sequential", p->named_children(), path);
    if (auto* p = dynamic_cast<const nn::ModuleListImpl*>(&m)) return chain("ModuleList", p->named_children(), path);
    if (auto* p = dynamic_cast<const MlpImpl*>(&m)) return mlp(*p, path);
    if (auto* p = dynamic_cast<const AttentionImpl*>(&m)) return attention(*p, path);
    if (auto* p = dynamic_cast<const TransformerBlockImpl*>(&m)) return block(*p, path);
    if (auto* p = dynamic_cast<const PatchEmbedImpl*>(&m)) return patch_embed(*p, path);
    if (auto* p = dynamic_cast<const ConvTokenizerImpl*>(&m)) return chain("ConvTokenizer", p->named_children(), path);
    if (auto* p = dynamic_cast<const BasicBlockImpl*>(&m)) return basic_block(*p, path);
    if (auto* p = dynamic_cast<const BottleneckImpl*>(&m)) return bottleneck(*p, path);
    if (auto* p = dynamic_cast<const ResNetImpl*>(&m)) return resnet(*p, path, {});
    if (auto* p = dynamic_cast<const ViTImpl*>(&m)) return vit(*p, path, {});
    throw Error("export: no TorchScript translation for the module '" + (path.empty() ? "(root)" : path) +
                "' of type " + m.name());
  }

  torch::jit::Module root(const Classifier& m, const Members& metadata) {
    if (auto* p = dynamic_cast<const ResNetImpl*>(&m)) return resnet(*p, "", metadata);
    if (auto* p = dynamic_cast<const ViTImpl*>(&m)) return vit(*p, "", metadata);
    throw Error("export: no TorchScript translation for a model of type " + m.name());
  }

 private:
  static std::string join(const std::string& path, const std::string& name) {
    return path.empty() ? name : path + "." + name;
  }
  torch::jit::Module sub(const nn::Module& parent, const std::string& path, const std::string& name) {
    return module(*parent.named_children()[name], join(path, name));
  }
  torch::jit::Module any(const nn::AnyModule& m, const std::string& path) { return module(*m.ptr(), path); }

  torch::jit::Module linear(const nn::LinearImpl& m) {
    Members mem;
    mem.params.emplace_back("weight", m.weight);
    if (m.bias.defined()) mem.params.emplace_back("bias", m.bias);
    return b_.make("Linear",
                   m.bias.defined() ? "    return torch.linear(x, self.weight, self.bias)\n"
                                    : "    return torch.linear(x, self.weight)\n",
                   mem);
  }

  torch::jit::Module conv2d(const nn::Conv2dImpl& m, const std::string& path) {
    const auto& o = m.options;
    using std::get_if;  // padding is a c10::variant in LibTorch 1.13, a std::variant in 2.x: found by ADL
    const auto* pad = get_if<torch::ExpandingArray<2>>(&o.padding());
    if (!pad || o.padding_mode().index() != 0)
      throw Error("export: " + path + ": only explicit zero padding is translated");
    Members mem;
    mem.params.emplace_back("weight", m.weight);
    if (m.bias.defined()) mem.params.emplace_back("bias", m.bias);
    const std::string body = "    return torch.conv2d(x, self.weight, " +
                             std::string(m.bias.defined() ? "self.bias" : "None") + ", " +
                             ints({o.stride()->at(0), o.stride()->at(1)}) + ", " +
                             ints({(*pad)->at(0), (*pad)->at(1)}) + ", " +
                             ints({o.dilation()->at(0), o.dilation()->at(1)}) + ", " + std::to_string(o.groups()) +
                             ")\n";
    return b_.make("Conv2d", body, mem);
  }

  torch::jit::Module batch_norm(const nn::BatchNorm2dImpl& m) {
    Members mem;
    mem.params = {{"weight", m.weight}, {"bias", m.bias}};
    mem.buffers = {{"running_mean", m.running_mean}, {"running_var", m.running_var},
                   {"num_batches_tracked", m.num_batches_tracked}};
    return b_.make("BatchNorm2d",
                   "    return torch.batch_norm(x, self.weight, self.bias, self.running_mean, self.running_var, "
                   "False, 0.0, " + lit(m.options.eps()) + ", True)\n",
                   mem);
  }

  torch::jit::Module group_norm(const GroupNormFp32Impl& m) {
    Members mem;
    mem.params = {{"weight", m.weight}, {"bias", m.bias}};
    return b_.make("GroupNorm",
                   "    return torch.group_norm(x, " + std::to_string(m.options.num_groups()) +
                       ", self.weight, self.bias, " + lit(m.options.eps()) + ", True)\n",
                   mem);
  }

  torch::jit::Module layer_norm(const LayerNormFp32Impl& m) {
    Members mem;
    mem.params = {{"weight", m.weight}, {"bias", m.bias}};
    const auto& shape = m.options.normalized_shape();
    TORCH_CHECK(shape.size() == 1, "LayerNorm over one dimension expected");
    return b_.make("LayerNorm",
                   "    return torch.layer_norm(x, " + ints({shape[0]}) + ", self.weight, self.bias, " +
                       lit(m.options.eps()) + ", True)\n",
                   mem);
  }

  torch::jit::Module token_batch_norm(const TokenBatchNormImpl& m) {
    Members mem;
    mem.params = {{"weight", m.weight}, {"bias", m.bias}};
    mem.buffers = {{"running_mean", m.running_mean}, {"running_var", m.running_var},
                   {"num_batches_tracked", m.num_batches_tracked}};
    return b_.make("TokenBatchNorm",
                   "    y = torch.batch_norm(x.reshape([-1, " + std::to_string(m.dim) +
                       "]), self.weight, self.bias, self.running_mean, self.running_var, False, 0.0, " + lit(m.eps) +
                       ", True)\n    return y.view(x.size())\n",
                   mem);
  }

  torch::jit::Module rms_norm(const RMSNormImpl& m) {
    Members mem;
    mem.params = {{"weight", m.weight}};
    return b_.make("RMSNorm",
                   "    xf = x.float()\n"
                   "    y = xf * torch.rsqrt(xf.pow(2).mean(-1, True) + " + lit(m.eps) + ")\n"
                   "    return (y * self.weight).to(x.dtype)\n",
                   mem);
  }

  torch::jit::Module layer_scale(const LayerScaleImpl& m) {
    Members mem;
    mem.params = {{"gamma", m.gamma}};
    return b_.make("LayerScale", "    return x * self.gamma\n", mem);
  }

  torch::jit::Module max_pool(const nn::MaxPool2dImpl& m, const std::string& path) {
    const auto& o = m.options;
    return b_.make("MaxPool2d",
                   "    return torch.max_pool2d(x, " + ints({o.kernel_size()->at(0), o.kernel_size()->at(1)}) + ", " +
                       ints({o.stride()->at(0), o.stride()->at(1)}) + ", " +
                       ints({o.padding()->at(0), o.padding()->at(1)}) + ", " +
                       ints({o.dilation()->at(0), o.dilation()->at(1)}) + ", " +
                       (o.ceil_mode() ? "True" : "False") + ")\n",
                   {});
  }

  // Sequential-like: children "0", "1", ... applied in order.
  torch::jit::Module chain(const std::string& kind, const torch::OrderedDict<std::string, std::shared_ptr<nn::Module>>& children,
                           const std::string& path) {
    Members mem;
    std::string body;
    for (const auto& item : children) {
      mem.modules.emplace_back(item.key(), module(*item.value(), join(path, item.key())));
      body += "    x = getattr(self, \"" + item.key() + "\").forward(x)\n";
    }
    return b_.make(kind, body + "    return x\n", mem);
  }

  torch::jit::Module mlp(const MlpImpl& m, const std::string& path) {
    Members mem;
    mem.modules = {{"fc1", linear(*m.fc1)}, {"fc2", linear(*m.fc2)}};
    const std::string approx = m.act->options.approximate();
    const std::string gelu = approx == "none" ? "torch.gelu(self.fc1.forward(x))"
                                              : "torch.gelu(self.fc1.forward(x), approximate=\"" + approx + "\")";
    return b_.make("Mlp", "    return self.fc2.forward(" + gelu + ")\n", mem);
  }

  torch::jit::Module attention(const AttentionImpl& m, const std::string& path) {
    const auto& o = m.options;
    const int64_t h = o.num_heads(), d = o.dim() / h, g = o.grid(), p = g * g, prefix = o.prefix_tokens();
    Members mem;
    mem.modules = {{"qkv", linear(*m.qkv)}, {"proj", linear(*m.proj)}};
    std::string s =
        "    b = x.size(0)\n    n = x.size(1)\n    c = x.size(2)\n"
        "    qkv = self.qkv.forward(x).view([b, n, 3, " + std::to_string(h) + ", " + std::to_string(d) +
        "]).permute([2, 0, 3, 1, 4])\n"
        "    q = qkv[0]\n    k = qkv[1]\n    v = qkv[2]\n";
    const bool rel = m.relative_position_bias_table.defined(), window = m.window_mask().defined();
    if (rel) {
      mem.params.emplace_back("relative_position_bias_table", m.relative_position_bias_table);
      mem.buffers.emplace_back("relative_position_index", m.relative_index());
    }
    if (window) mem.buffers.emplace_back("attn_mask", m.window_mask());
    std::string bias;
    if (rel) {
      bias = "self.relative_position_bias_table.index_select(0, self.relative_position_index).view([" +
             std::to_string(p) + ", " + std::to_string(p) + ", -1]).permute([2, 0, 1])";
      if (prefix > 0)
        bias = "torch.constant_pad_nd(" + bias + ", " + ints({prefix, 0, prefix, 0}) + ", 0.0)";
    }
    // The same kernels as the native module: the fused one where this LibTorch has it.
    if (!o.gated_positional() && compat::has_fused_attention()) {
      std::string mask = "None";
      if (rel) {
        s += "    mask = " + bias + "\n";
        if (window) s += "    mask = mask.masked_fill(torch.logical_not(self.attn_mask), float(\"-inf\"))\n";
        s += "    mask = mask.to(q.dtype)\n";
        mask = "mask";
      } else if (window) {
        mask = "self.attn_mask";
      }
      s += "    out = torch.scaled_dot_product_attention(q, k, v, " + mask + ", 0.0, False)\n";
    } else {
      s += "    attn = torch.matmul(q * " + lit(1.0 / std::sqrt(double(d))) + ", k.transpose(-2, -1))\n";
      if (rel) s += "    attn = attn + " + bias + ".to(attn.dtype)\n";
      if (window) s += "    attn = attn.masked_fill(torch.logical_not(self.attn_mask), float(\"-inf\"))\n";
      s += "    attn = torch.softmax(attn, -1)\n";
      if (o.gated_positional()) {
        mem.modules.emplace_back("pos_proj", linear(*m.pos_proj));
        mem.params.emplace_back("gating_param", m.gating_param);
        mem.buffers.emplace_back("rel_pos", m.relative_offsets());
        s += "    pos = torch.softmax(self.pos_proj.forward(self.rel_pos).permute([2, 0, 1]), -1)\n"
             "    gate = torch.sigmoid(self.gating_param).view([1, " + std::to_string(h) + ", 1, 1])\n"
             "    attn = (1.0 - gate) * attn + gate * pos.to(attn.dtype)\n";
      }
      s += "    out = torch.matmul(attn, v)\n";
    }
    s += "    return self.proj.forward(out.transpose(1, 2).reshape([b, n, c]))\n";
    return b_.make(o.gated_positional() ? "GatedPositionalAttention" : "Attention", s, mem);
  }

  torch::jit::Module block(const TransformerBlockImpl& m, const std::string& path) {
    const auto& o = m.options;
    Members mem;
    mem.modules = {{"norm1", any(m.norm1, join(path, "norm1"))}, {"attn", attention(*m.attn, join(path, "attn"))},
                   {"norm2", any(m.norm2, join(path, "norm2"))}, {"mlp", mlp(*m.mlp, join(path, "mlp"))}};
    const bool ls = bool(m.ls1);
    if (ls) {
      mem.modules.emplace_back("ls1", layer_scale(*m.ls1));
      mem.modules.emplace_back("ls2", layer_scale(*m.ls2));
    }
    auto branch = [&](const std::string& expr, const std::string& scale) {
      return ls ? "self." + scale + ".forward(" + expr + ")" : expr;
    };
    const std::string plus_x = o.residual() ? "x + " : "", plus_y = o.residual() ? "y + " : "";
    std::string s;
    if (o.norm_placement() == "post") {
      s = "    y = self.norm1.forward(" + plus_x + branch("self.attn.forward(x)", "ls1") + ")\n"
          "    return self.norm2.forward(" + plus_y + branch("self.mlp.forward(y)", "ls2") + ")\n";
    } else {
      s = "    y = " + plus_x + branch("self.attn.forward(self.norm1.forward(x))", "ls1") + "\n"
          "    return " + plus_y + branch("self.mlp.forward(self.norm2.forward(y))", "ls2") + "\n";
    }
    return b_.make("Block", s, mem);
  }

  torch::jit::Module patch_embed(const PatchEmbedImpl& m, const std::string& path) {
    Members mem;
    std::string s;
    if (!m.backbone.is_empty()) {
      mem.modules.emplace_back("backbone", any(m.backbone, join(path, "backbone")));
      s += "    x = self.backbone.forward(x)\n";
    }
    mem.modules.emplace_back("proj", conv2d(*m.proj, join(path, "proj")));
    s += "    return self.proj.forward(x).flatten(2).transpose(1, 2)\n";
    return b_.make("PatchEmbed", s, mem);
  }

  static std::string residual_tail(bool residual, bool has_downsample) {
    if (!residual) return "    return torch.relu(y)\n";
    return has_downsample ? "    return torch.relu(y + self.downsample.forward(x))\n"
                          : "    return torch.relu(y + x)\n";
  }

  torch::jit::Module basic_block(const BasicBlockImpl& m, const std::string& path) {
    Members mem;
    mem.modules = {{"conv1", conv2d(*m.conv1, join(path, "conv1"))}, {"bn1", any(m.bn1, join(path, "bn1"))},
                   {"conv2", conv2d(*m.conv2, join(path, "conv2"))}, {"bn2", any(m.bn2, join(path, "bn2"))}};
    if (m.downsample) mem.modules.emplace_back("downsample", module(*m.downsample, join(path, "downsample")));
    return b_.make("BasicBlock",
                   "    y = torch.relu(self.bn1.forward(self.conv1.forward(x)))\n"
                   "    y = self.bn2.forward(self.conv2.forward(y))\n" +
                       residual_tail(m.options.residual(), bool(m.downsample)),
                   mem);
  }

  torch::jit::Module bottleneck(const BottleneckImpl& m, const std::string& path) {
    Members mem;
    mem.modules = {{"conv1", conv2d(*m.conv1, join(path, "conv1"))}, {"bn1", any(m.bn1, join(path, "bn1"))},
                   {"conv2", conv2d(*m.conv2, join(path, "conv2"))}, {"bn2", any(m.bn2, join(path, "bn2"))},
                   {"conv3", conv2d(*m.conv3, join(path, "conv3"))}, {"bn3", any(m.bn3, join(path, "bn3"))}};
    if (m.downsample) mem.modules.emplace_back("downsample", module(*m.downsample, join(path, "downsample")));
    return b_.make("Bottleneck",
                   "    y = torch.relu(self.bn1.forward(self.conv1.forward(x)))\n"
                   "    y = torch.relu(self.bn2.forward(self.conv2.forward(y)))\n"
                   "    y = self.bn3.forward(self.conv3.forward(y))\n" +
                       residual_tail(m.options.residual(), bool(m.downsample)),
                   mem);
  }

  // A check of the input's channels and size, for a root module (a clear error for consumers).
  static std::string input_check(int64_t channels, int64_t size) {
    if (size <= 0) return "";
    const std::string c = std::to_string(channels), s = std::to_string(size);
    return "    assert x.dim() == 4 and x.size(1) == " + c + " and x.size(2) == " + s + " and x.size(3) == " + s +
           ", \"expected images of shape (B, " + c + ", " + s + ", " + s + ")\"\n";
  }

  torch::jit::Module resnet(const ResNetImpl& m, const std::string& path, const Members& metadata) {
    Members mem = metadata;
    mem.modules = {{"conv1", conv2d(*m.conv1, join(path, "conv1"))}, {"bn1", any(m.bn1, join(path, "bn1"))}};
    const bool root = !metadata.attributes.empty();
    std::string s = root ? input_check(m.options.in_chans(), image_size_) : "";
    s += "    x = torch.relu(self.bn1.forward(self.conv1.forward(x)))\n";
    if (m.maxpool) {
      mem.modules.emplace_back("maxpool", max_pool(*m.maxpool, join(path, "maxpool")));
      s += "    x = self.maxpool.forward(x)\n";
    }
    for (size_t i = 0; i < m.layers.size(); ++i) {
      const std::string name = "layer" + std::to_string(i + 1);
      mem.modules.emplace_back(name, module(*m.layers[i], join(path, name)));
      s += "    x = self." + name + ".forward(x)\n";
    }
    if (m.options.global_pool()) s += "    x = x.mean([2, 3])\n";
    if (m.fc) {
      mem.modules.emplace_back("fc", linear(*m.fc));
      s += "    x = self.fc.forward(x)\n";
    }
    return b_.make("ResNet", s + "    return x\n", mem);
  }

  torch::jit::Module vit(const ViTImpl& m, const std::string& path, const Members& metadata) {
    const auto& o = m.options;
    Members mem = metadata;
    const bool root = !metadata.attributes.empty();
    std::string s = root ? input_check(o.in_chans(), image_size_) : "";
    mem.modules.emplace_back("patch_embed", patch_embed(*m.patch_embed, join(path, "patch_embed")));
    s += "    x = self.patch_embed.forward(x)\n";
    const bool cls = m.cls_token.defined();
    const auto cls_at = size_t(o.gpsa_layers());
    if (cls) mem.params.emplace_back("cls_token", m.cls_token);
    const std::string add_cls = "    x = torch.cat([self.cls_token.expand([x.size(0), -1, -1]), x], 1)\n";
    if (cls && cls_at == 0) s += add_cls;
    if (m.pos_embed.defined()) {
      if (o.pos_embed() == "learned") {
        mem.params.emplace_back("pos_embed", m.pos_embed);
      } else {
        mem.buffers.emplace_back("pos_embed", m.pos_embed);
      }
      s += "    x = x + self.pos_embed\n";
    }
    mem.modules.emplace_back("blocks", module(*m.blocks, join(path, "blocks")));
    if (cls && cls_at > 0) {  // the class token joins after the GPSA blocks
      for (size_t i = 0; i < m.blocks->size(); ++i) {
        if (i == cls_at) s += add_cls;
        s += "    x = getattr(self.blocks, \"" + std::to_string(i) + "\").forward(x)\n";
      }
      if (cls_at == m.blocks->size()) s += add_cls;
    } else {
      s += "    x = self.blocks.forward(x)\n";
    }
    mem.modules.emplace_back("norm", any(m.norm, join(path, "norm")));
    s += "    x = self.norm.forward(x)\n";
    if (cls) {
      s += "    x = x.select(1, 0)\n";
    } else if (m.attention_pool) {
      mem.modules.emplace_back("attention_pool", linear(*m.attention_pool));
      s += "    w = torch.softmax(self.attention_pool.forward(x), 1)\n"
           "    x = torch.matmul(w.transpose(1, 2), x).squeeze(1)\n";
    } else {
      s += "    x = x.mean(1)\n";
    }
    mem.modules.emplace_back("head", linear(*m.head));
    return b_.make("VisionTransformer", s + "    return self.head.forward(x)\n", mem);
  }

  Builder& b_;
  int64_t image_size_;
};

}  // namespace

torch::jit::Module to_torchscript(const Classifier& model, const ScriptMetadata& meta) {
  Builder builder;
  Translator t(builder, meta.image_size);
  Members attrs;
  c10::List<std::string> names;
  for (const auto& n : meta.class_names) names.push_back(n);
  attrs.attributes = {
      {"class_names", c10::ListType::ofStrings(), names},
      {"image_size", c10::IntType::get(), meta.image_size},
      {"in_chans", c10::IntType::get(), meta.in_chans},
      {"mean", c10::ListType::ofFloats(), c10::List<double>(meta.mean)},
      {"std", c10::ListType::ofFloats(), c10::List<double>(meta.std)},
      {"family", c10::StringType::get(), meta.family},
      {"preset", c10::StringType::get(), meta.preset},
      {"biaslab_version", c10::StringType::get(), meta.biaslab_version},
  };
  torch::jit::Module out = t.root(model, attrs);
  out.eval();
  return out;
}

}  // namespace biaslab
