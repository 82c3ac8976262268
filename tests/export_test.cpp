#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include "config/loader.h"
#include "core/errors.h"
#include "export/archive.h"
#include "export/torchscript.h"
#include "models/registry.h"
#include "models/vit.h"
#include "test_util.h"

using namespace biaslab;

namespace {

struct Case {
  std::string name;
  std::string preset;
  std::vector<std::string> sets;
};

// Tiny versions of every family with every ablation knob value the config offers.
std::vector<Case> cases() {
  const std::vector<std::string> tiny_vit = {"model.embed_dim=16", "model.depth=2", "model.num_heads=4"};
  const std::vector<std::string> tiny_cnn = {"model.layers=[1, 1]", "model.widths=[4, 8]"};
  auto with = [](std::vector<std::string> base, std::vector<std::string> more) {
    base.insert(base.end(), more.begin(), more.end());
    return base;
  };
  std::vector<Case> out = {
      {"resnet20", "resnet20", tiny_cnn},
      {"resnet18_imagenet_stem", "resnet18", with(tiny_cnn, {"model.layers=[1, 1, 1, 1]", "model.widths=[4, 4, 8, 8]"})},
      {"resnet50_bottleneck", "resnet50", {"model.layers=[1, 2]", "model.widths=[4, 8]"}},
      {"resnet_no_residual", "resnet20", with(tiny_cnn, {"model.residual=false"})},
      {"vit_learned_cls", "vit_lite_p4", tiny_vit},
      {"vit_post_norm", "vit_lite_p4", with(tiny_vit, {"model.norm_placement=post"})},
      {"vit_no_residual", "vit_lite_p4", with(tiny_vit, {"model.residual=false"})},
      {"vit_sincos_gap", "vit_lite_p4", with(tiny_vit, {"model.pos_embed=sincos2d", "model.pool=gap"})},
      {"vit_no_pos_seq_pool", "vit_lite_p4", with(tiny_vit, {"model.pos_embed=none", "model.pool=seq"})},
      {"vit_relative", "vit_lite_p4", with(tiny_vit, {"model.pos_embed=relative"})},
      {"vit_window", "vit_lite_p4", with(tiny_vit, {"model.attn_window=3"})},
      {"vit_unscaled_hot", "vit_lite_p4", with(tiny_vit, {"model.attn_scale=none", "model.attn_temperature=4.0"})},
      {"vit_window_cold", "vit_lite_p4", with(tiny_vit, {"model.attn_window=3", "model.attn_temperature=0.5"})},
      {"vit_window_relative_gap", "vit_lite_p4",
       with(tiny_vit, {"model.attn_window=3", "model.pos_embed=relative", "model.pool=gap"})},
      {"vit_layer_scale_no_qkv_bias", "vit_lite_p4", with(tiny_vit, {"model.layer_scale_init=0.1", "model.qkv_bias=false"})},
      {"vit_rezero", "vit_lite_p4", with(tiny_vit, {"model.rezero=true"})},
      {"convit_gpsa", "convit_lite_p4", with(tiny_vit, {"model.gpsa_layers=1"})},
      {"convit_all_gpsa", "convit_lite_p4", with(tiny_vit, {"model.gpsa_layers=2"})},
      {"convit_gpsa_gap_sincos", "convit_lite_p4",
       with(tiny_vit, {"model.gpsa_layers=1", "model.pool=gap", "model.pos_embed=sincos2d"})},
      {"convit_gpsa_seq_pool", "convit_lite_p4", with(tiny_vit, {"model.gpsa_layers=1", "model.pool=seq"})},
      {"hybrid_resnet", "vit_hybrid_lite", with(tiny_vit, {"model.layers=[1, 1]", "model.widths=[4, 8]", "model.patch_size=2"})},
      {"coatnet", "coatnet_lite", with(tiny_vit, {"model.layers=[1, 1]", "model.widths=[4, 8]"})},
      {"cct_conv_tokenizer", "cct_lite", with(tiny_vit, {"model.widths=[4, 8]"})},
  };
  for (const std::string norm : {"groupnorm", "layernorm", "none"}) {
    out.push_back({"resnet_" + norm, "resnet20", with(tiny_cnn, {"model.norm=" + norm})});
    out.push_back({"hybrid_cnn_" + norm, "vit_hybrid_lite",
                   with(tiny_vit, {"model.layers=[1, 1]", "model.widths=[4, 8]", "model.patch_size=2",
                                   "model.cnn_norm=" + norm})});
  }
  for (const std::string norm : {"batchnorm", "rmsnorm", "none"})
    out.push_back({"vit_" + norm, "vit_lite_p4", with(tiny_vit, {"model.norm=" + norm})});
  out.push_back({"vit_batchnorm_post", "vit_lite_p4", with(tiny_vit, {"model.norm=batchnorm", "model.norm_placement=post"})});
  return out;
}

Config case_config(const Case& c) {
  std::vector<std::string> sets = {"data.image_size=16", "data.channels=3", "data.num_classes=5",
                                   "data.mean=[0.5, 0.4, 0.3]", "data.std=[0.2, 0.25, 0.3]",
                                   "data.class_names=[a, b, c, d, e]"};
  sets.insert(sets.end(), c.sets.begin(), c.sets.end());
  return load_config_text("model: {preset: " + c.preset + "}\ndata: {preset: fashion_mnist}\n", "tiny.yaml", sets);
}

// Randomises what initialisation leaves trivial (zero biases, unit norms, fresh
// BatchNorm statistics, zero ReZero gains) so that every weight matters.
void perturb(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  for (auto& p : model.named_parameters()) p.value().add_(torch::randn_like(p.value()) * 0.05);
  for (auto& b : model.named_buffers()) {
    const std::string& name = b.key();
    if (name.size() >= 12 && name.compare(name.size() - 12, 12, "running_mean") == 0) b.value().normal_(0.0, 0.1);
    if (name.size() >= 11 && name.compare(name.size() - 11, 11, "running_var") == 0) b.value().uniform_(0.5, 1.5);
  }
}

ScriptMetadata metadata(const Config& cfg) {
  ScriptMetadata m;
  m.class_names = cfg.data.class_names;
  m.image_size = cfg.data.image_size;
  m.in_chans = cfg.data.channels;
  m.mean = cfg.data.mean;
  m.std = cfg.data.std;
  m.family = cfg.model.family;
  m.preset = cfg.model.preset;
  m.biaslab_version = "test";
  return m;
}

class ExportParity : public ::testing::TestWithParam<Case> {};

// The exported module, saved and loaded back, gives the native model's logits, and its
// state holds every native parameter and buffer under the same name with the same values.
TEST_P(ExportParity, SavedModuleMatchesNativeModel) {
  torch::manual_seed(0);
  const Config cfg = case_config(GetParam());
  auto model = build_model(cfg.model, input_spec(cfg.data));
  perturb(*model);
  model->eval();
  test::TempDir dir;
  const auto file = (dir / "model.pt").string();
  to_torchscript(*model, metadata(cfg)).save(file);
  torch::jit::Module loaded = torch::jit::load(file);

  auto x = torch::randn({3, 3, 16, 16});
  torch::Tensor expected;
  {
    torch::NoGradGuard no_grad;
    expected = model->forward(x);
  }
  auto got = loaded.forward({x}).toTensor();
  ASSERT_EQ(got.sizes(), expected.sizes());
  EXPECT_LE((got - expected).abs().max().item<double>(), 1e-5) << loaded.dump_to_str(true, false, false);

  std::map<std::string, torch::Tensor> exported;
  for (const auto& p : loaded.named_parameters()) exported[p.name] = p.value;
  for (const auto& b : loaded.named_buffers()) exported[b.name] = b.value;
  auto check = [&](const std::string& name, const torch::Tensor& t) {
    auto it = exported.find(name);
    ASSERT_NE(it, exported.end()) << name << " missing from the export";
    EXPECT_TRUE(torch::equal(it->second, t)) << name;
  };
  for (const auto& p : model->named_parameters()) check(p.key(), p.value());
  for (const auto& b : model->named_buffers()) check(b.key(), b.value());

  EXPECT_EQ(loaded.attr("image_size").toInt(), 16);
  EXPECT_EQ(loaded.attr("class_names").toListRef().size(), 5u);
  EXPECT_EQ(loaded.attr("family").toStringRef(), cfg.model.family);
}

INSTANTIATE_TEST_SUITE_P(AllFamiliesAndKnobs, ExportParity, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace

// Modules with the same code share one class named after the native module.
TEST(Export, ModulesOfOneKindShareAClassAndTheCodeIsReadable) {
  torch::manual_seed(0);
  const Config cfg = case_config({"vit", "vit_lite_p4", {"model.embed_dim=16", "model.depth=3", "model.num_heads=4"}});
  auto model = build_model(cfg.model, input_spec(cfg.data));
  auto exported = to_torchscript(*model, metadata(cfg));
  std::set<std::string> block_types;
  for (const auto& child : exported.attr("blocks").toModule().named_children())
    block_types.insert(child.value.type()->name()->name());
  EXPECT_EQ(block_types, (std::set<std::string>{"Block"}));
  EXPECT_EQ(exported.attr("patch_embed").toModule().attr("proj").toModule().type()->name()->name(), "Conv2d");
  EXPECT_EQ(exported.type()->name()->name(), "VisionTransformer");
}

// The root module rejects images of the wrong shape with a message saying what it expects.
TEST(Export, WrongInputShapeIsAClearError) {
  const Config cfg = case_config({"resnet", "resnet20", {"model.layers=[1, 1]", "model.widths=[4, 8]"}});
  auto model = build_model(cfg.model, input_spec(cfg.data));
  auto exported = to_torchscript(*model, metadata(cfg));
  try {
    exported.forward({torch::randn({1, 1, 16, 16})});
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("expected images of shape (B, 3, 16, 16)"), std::string::npos) << e.what();
  }
}

// A module without a translation, or a configuration the translation does not cover, is an
// error naming where it sits in the model.
TEST(Export, UntranslatableModuleIsAnErrorNamingItsPath) {
  namespace nn = torch::nn;
  const Config cfg = case_config({"vit", "vit_lite_p4", {}});
  auto vit_with = [](nn::AnyModule backbone) {
    return std::make_shared<ViTImpl>(ViTOptions(16, 4, 5).embed_dim(16).depth(1).num_heads(4).backbone(std::move(backbone))
                                         .backbone_size(16).backbone_channels(3));
  };
  auto error_of = [&](const std::shared_ptr<ViTImpl>& model) {
    try {
      to_torchscript(*model, metadata(cfg));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of(vit_with(nn::AnyModule(nn::Dropout()))),
            "export: no TorchScript translation for the module 'patch_embed.backbone' of type torch::nn::DropoutImpl");
  EXPECT_EQ(error_of(vit_with(nn::AnyModule(nn::Conv2d(nn::Conv2dOptions(3, 3, 3).padding(1).padding_mode(torch::kReflect))))),
            "export: patch_embed.backbone: only explicit zero padding is translated");
}

// Python's torch.jit.load runs the archive of every family and knob value and gives the
// native logits (tests/python/check_export.py, with the Python matching this LibTorch).
TEST(ExportPython, EveryFamilyAndKnobLoadsInPythonWithTheNativeLogits) {
  test::TempDir dir;
  std::string archives;
  for (const Case& c : cases()) {
    torch::manual_seed(0);
    const Config cfg = case_config(c);
    auto model = build_model(cfg.model, input_spec(cfg.data));
    perturb(*model);
    model->eval();
    const ScriptMetadata m = metadata(cfg);
    auto x = torch::randn({3, 3, 16, 16});
    torch::Tensor logits;
    {
      torch::NoGradGuard no_grad;
      logits = model->forward(x);
    }
    const nlohmann::json meta = {{"family", m.family},         {"preset", m.preset}, {"class_names", m.class_names},
                                 {"image_size", m.image_size}, {"in_chans", m.in_chans}, {"mean", m.mean},
                                 {"std", m.std}};
    const std::string file = (dir / (c.name + ".pt")).string();
    save_archive(to_torchscript(*model, m), file, meta, to_yaml(cfg), x, logits);
    archives += " " + file;
  }
  const std::string cmd =
      std::string(BIASLAB_PYTHON) + " " + BIASLAB_TEST_PYTHON_DIR + "/check_export.py" + archives;
  const int status = std::system(cmd.c_str());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    BIASLAB_SKIP_OR_FAIL(BIASLAB_PYTHON << " has no torch (install python3-torch)");
  }
  EXPECT_EQ(status, 0) << cmd;
}
