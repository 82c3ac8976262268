#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "config/loader.h"
#include "core/errors.h"
#include "engine/checkpoint.h"
#include "export/torchscript.h"
#include "export/weights.h"
#include "models/registry.h"
#include "test_util.h"

using namespace biaslab;

namespace {

ClassifierPtr tiny_model(const std::string& preset, std::vector<std::string> sets, int64_t image_size = 16) {
  std::vector<std::string> all = {"data.image_size=" + std::to_string(image_size), "data.channels=3",
                                  "data.num_classes=10", "data.mean=[0.5, 0.5, 0.5]", "data.std=[0.5, 0.5, 0.5]",
                                  "data.class_names=[]"};
  all.insert(all.end(), sets.begin(), sets.end());
  const Config cfg =
      load_config_text("model: {preset: " + preset + "}\ndata: {preset: fashion_mnist}\n", "tiny.yaml", all);
  return build_model(cfg.model, input_spec(cfg.data));
}

ClassifierPtr tiny_vit() { return tiny_model("vit_lite_p4", {"model.embed_dim=16", "model.depth=2", "model.num_heads=2"}); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

// The Python (with torch and torchvision) matching this LibTorch, as CMake found it.
int run_python(const std::string& args) {
  const std::string cmd = std::string(BIASLAB_PYTHON) + " " + BIASLAB_TEST_PYTHON_DIR + "/" + args;
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST(Weights, WriteReadRoundTripRestoresEveryTensor) {
  torch::manual_seed(0);
  auto a = tiny_vit();
  torch::manual_seed(1);
  auto b = tiny_vit();
  test::TempDir dir;
  const auto file = (dir / "w.pt").string();
  write_state_dict(model_state_dict(*a, Names::native), file);
  EXPECT_EQ(load_state_dict(*b, read_state_dict(file), {}, file), a->named_parameters().size() + a->named_buffers().size());
  for (const auto& p : a->named_parameters()) EXPECT_TRUE(torch::equal(p.value(), b->named_parameters()[p.key()])) << p.key();
}

// A state dict saved from a GPU (storages tagged cuda:0) loads onto the CPU.
TEST(Weights, StateDictSavedFromAGpuLoadsOnTheCpu) {
  test::TempDir dir;
  const std::string file = (dir / "cuda.pt").string();
  const int made = run_python("torchvision_interop.py cuda_tagged " + file);
  if (made == 77) {
    BIASLAB_SKIP_OR_FAIL(BIASLAB_PYTHON << " has no torch");
  }
  ASSERT_EQ(made, 0);
  const StateDict sd = read_state_dict(file);
  ASSERT_EQ(sd.size(), 2u);
  std::map<std::string, torch::Tensor> t(sd.begin(), sd.end());
  EXPECT_TRUE(t["weight"].device().is_cpu());
  EXPECT_TRUE(torch::equal(t["weight"], torch::arange(6.0).view({2, 3})));
  EXPECT_TRUE(torch::equal(t["bias"], torch::ones({2})));
}

// Buffers (BatchNorm statistics, the int64 batch counter) survive the round trip too.
TEST(Weights, BuffersRoundTrip) {
  torch::manual_seed(0);
  auto a = tiny_model("resnet20", {"model.layers=[1]", "model.widths=[4]"});
  {
    torch::NoGradGuard no_grad;
    for (auto& b : a->named_buffers()) b.value().add_(1);  // running stats and num_batches_tracked
  }
  auto b = tiny_model("resnet20", {"model.layers=[1]", "model.widths=[4]"});
  test::TempDir dir;
  const auto file = (dir / "w.pt").string();
  write_state_dict(model_state_dict(*a, Names::native), file);
  load_state_dict(*b, read_state_dict(file), {}, file);
  EXPECT_EQ(weights_fingerprint(*a), weights_fingerprint(*b));
  EXPECT_EQ(b->named_buffers()["bn1.num_batches_tracked"].item<int64_t>(), 1);
}

// A skip prefix that matches nothing is a typo, not a no-op.
TEST(Weights, SkipPrefixMatchingNothingIsAnError) {
  auto vit = tiny_vit();
  const StateDict sd = model_state_dict(*vit, Names::native);
  try {
    load_state_dict(*vit, sd, {"heads"}, "w.pt");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("model.init_skip: 'heads' matches no key"), std::string::npos) << e.what();
  }
}

// A biaslab export archive is a weights file too (its attention index buffers are not weights).
TEST(Weights, ExportArchiveInitialisesAModel) {
  auto make = [] {
    return tiny_model("vit_lite_p4", {"model.embed_dim=16", "model.depth=2", "model.num_heads=2",
                                      "model.attn_window=3", "model.pos_embed=relative"});
  };
  torch::manual_seed(0);
  auto a = make();
  torch::manual_seed(1);
  auto b = make();
  test::TempDir dir;
  const auto file = (dir / "archive.pt").string();
  ScriptMetadata meta;
  meta.image_size = 16;
  meta.in_chans = 3;
  to_torchscript(*a, meta).save(file);
  load_state_dict(*b, read_state_dict(file), {}, file);
  EXPECT_EQ(weights_fingerprint(*a), weights_fingerprint(*b));
}

TEST(Weights, TorchvisionViTNamesAreABijection) {
  auto vit = tiny_vit();
  std::set<std::string> seen;
  for (const auto& [name, t] : model_state_dict(*vit, Names::native)) {
    const std::string tv = vit_name_to_torchvision(name);
    EXPECT_NE(tv, name) << "no torchvision name for " << name;
    EXPECT_EQ(vit_name_from_torchvision(tv), name);
    EXPECT_TRUE(seen.insert(tv).second) << tv << " used twice";
  }
  EXPECT_EQ(vit_name_to_torchvision("blocks.11.attn.qkv.weight"),
            "encoder.layers.encoder_layer_11.self_attention.in_proj_weight");
  EXPECT_EQ(vit_name_to_torchvision("blocks.0.mlp.fc2.bias"), "encoder.layers.encoder_layer_0.mlp.3.bias");
  EXPECT_EQ(vit_name_to_torchvision("head.weight"), "heads.head.weight");
  EXPECT_EQ(vit_name_from_torchvision("encoder.layers.encoder_layer_3.mlp.linear_1.weight"), "blocks.3.mlp.fc1.weight");
  EXPECT_EQ(vit_name_to_torchvision("layer1.0.conv1.weight"), "layer1.0.conv1.weight");  // not a ViT name
}

TEST(Weights, TorchvisionNamedFileLoadsIntoTheViT) {
  torch::manual_seed(0);
  auto a = tiny_vit();
  torch::manual_seed(1);
  auto b = tiny_vit();
  test::TempDir dir;
  const auto file = (dir / "tv.pt").string();
  write_state_dict(model_state_dict(*a, Names::torchvision), file);
  load_state_dict(*b, read_state_dict(file), {}, file);
  auto x = torch::randn({2, 3, 16, 16});
  a->eval();
  b->eval();
  EXPECT_TRUE(torch::equal(a->forward(x), b->forward(x)));
}

TEST(Weights, MismatchesNameEveryMissingUnexpectedAndWronglyShapedKey) {
  auto vit = tiny_vit();
  StateDict sd = model_state_dict(*vit, Names::native);
  StateDict broken;
  for (auto& [name, t] : sd) {
    if (name == "head.bias") continue;                                        // missing
    if (name == "pos_embed") t = torch::zeros({1, 5, 16});                   // wrong shape
    broken.emplace_back(name, t);
  }
  broken.emplace_back("extra.weight", torch::zeros({3}));                   // unexpected
  const std::string msg = error_of([&] { load_state_dict(*vit, broken, {}, "w.pt"); });
  EXPECT_NE(msg.find("w.pt: the weights do not fit the model"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing (1): head.bias"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unexpected (1): extra.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("wrong shape (1): pos_embed (file [1, 5, 16], model [1, 17, 16])"), std::string::npos) << msg;
  // model.init_skip is a training key: convert and eval --weights, which load here too, have no use for its hint.
  EXPECT_EQ(msg.find("init_skip"), std::string::npos) << msg;
}

TEST(Weights, SkippedPrefixesKeepTheirInitialisation) {
  torch::manual_seed(0);
  auto source = tiny_model("resnet20", {"model.layers=[1]", "model.widths=[4]", "data.num_classes=7"});
  torch::manual_seed(1);
  auto target = tiny_model("resnet20", {"model.layers=[1]", "model.widths=[4]"});  // 10 classes: new fc
  const auto fc_before = target->named_parameters()["fc.weight"].clone();
  StateDict sd = model_state_dict(*source, Names::native);
  EXPECT_NE(error_of([&] { load_state_dict(*target, sd, {}, "w.pt"); }).find("fc.weight (file [7, 4], model [10, 4])"),
            std::string::npos);
  load_state_dict(*target, sd, {"fc"}, "w.pt");
  EXPECT_TRUE(torch::equal(target->named_parameters()["fc.weight"], fc_before));
  EXPECT_TRUE(torch::equal(target->named_parameters()["conv1.weight"], source->named_parameters()["conv1.weight"]));
}

TEST(Weights, UnreadableFilesAreClearErrors) {
  test::TempDir dir;
  EXPECT_NE(error_of([&] { read_state_dict((dir / "none.pt").string()); }).find("none.pt: no such file"),
            std::string::npos);
  test::write_text(dir / "junk.pt", "this is not a weights file");
  const std::string msg = error_of([&] { read_state_dict((dir / "junk.pt").string()); });
  EXPECT_NE(msg.find("junk.pt: neither a dict of tensors saved by torch.save"), std::string::npos) << msg;
  // A pickled value that is not a dict of tensors.
  c10::Dict<std::string, int64_t> ints;
  ints.insert("a", 1);
  const auto bytes = torch::pickle_save(c10::IValue(ints));
  std::ofstream(dir / "ints.pt", std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  EXPECT_NE(error_of([&] { read_state_dict((dir / "ints.pt").string()); }).find("entry 'a' is a Int, expected a tensor"),
            std::string::npos);
  // A truncated file.
  auto vit = tiny_vit();
  write_state_dict(model_state_dict(*vit, Names::native), (dir / "w.pt").string());
  const std::string full = [&] {
    std::ifstream in(dir / "w.pt", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  test::write_text(dir / "cut.pt", full.substr(0, full.size() / 2));
  EXPECT_NE(error_of([&] { read_state_dict((dir / "cut.pt").string()); }).find("cut.pt: neither"), std::string::npos);
}

// torchvision's models with random weights, saved by Python in both documented forms,
// give torchvision's outputs in biaslab; biaslab's weights saved with torchvision names
// load into torchvision (strict) and give biaslab's outputs.
class TorchvisionParity : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(TorchvisionParity, WeightsMoveBothWaysWithTheSameOutputs) {
  const auto& [tv_name, preset] = GetParam();
  test::TempDir dir;
  const std::string d = dir.path().string();
  const int made = run_python("torchvision_interop.py make " + d + " " + tv_name);
  if (made == 77) {
    BIASLAB_SKIP_OR_FAIL(BIASLAB_PYTHON << " has no torch/torchvision (install python3-torchvision)");
  }
  ASSERT_EQ(made, 0);
  const int64_t size = tv_name == "resnet18" ? 64 : 32;
  auto io = read_state_dict(d + "/" + tv_name + ".io.pt");
  std::map<std::string, torch::Tensor> tensors(io.begin(), io.end());
  for (const std::string form : {".state_dict.pt", ".script.pt"}) {
    auto model = tiny_model(preset, {}, size);
    model->eval();
    const std::string file = d + "/" + tv_name + form;
    load_state_dict(*model, read_state_dict(file), {}, file);
    torch::NoGradGuard no_grad;
    const double diff = (model->forward(tensors["input"]) - tensors["output"]).abs().max().item<double>();
    std::cout << "biaslab " << preset << " with " << file << ": max |output difference| " << diff << "\n";
    EXPECT_LE(diff, 1e-4) << file;
  }
  // The reverse direction.
  torch::manual_seed(3);
  auto model = tiny_model(preset, {}, size);
  model->eval();
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.add_(torch::randn_like(p) * 0.02);
    auto x = torch::randn({2, 3, size, size});
    write_state_dict({{"input", x}, {"output", model->forward(x)}}, d + "/" + tv_name + ".biaslab_io.pt");
  }
  write_state_dict(model_state_dict(*model, Names::torchvision), d + "/" + tv_name + ".biaslab.pt");
  EXPECT_EQ(run_python("torchvision_interop.py check " + d + " " + tv_name), 0);
}

INSTANTIATE_TEST_SUITE_P(ResNet18AndViTB16, TorchvisionParity,
                         ::testing::Values(std::make_pair(std::string("resnet18"), std::string("resnet18")),
                                           std::make_pair(std::string("vit_b_16"), std::string("vit_b16"))),
                         [](const auto& info) { return info.param.second; });
