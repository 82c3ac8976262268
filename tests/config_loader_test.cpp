#include <gtest/gtest.h>

#include <fmt/format.h>

#include "config/loader.h"
#include "core/errors.h"
#include "test_util.h"

using namespace biaslab;
using biaslab::test::TempDir;
using biaslab::test::write_text;

namespace {

const char* kResnet = "model: {preset: resnet20}\ndata: {preset: fashion_mnist}\n";
const char* kVit = "model: {preset: vit_lite_p4}\ndata: {preset: fashion_mnist}\n";

// Loads `yaml` from a real file (so messages carry its path) and returns the
// ConfigError message, failing the test if no ConfigError is thrown.
std::string error_of(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  TempDir dir;
  const auto path = dir / "exp.yaml";
  write_text(path, yaml);
  try {
    load_config(path.string(), sets);
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    const auto at = msg.find(path.string());
    return at == std::string::npos ? msg : msg.replace(at, path.string().size(), "exp.yaml");
  }
  ADD_FAILURE() << "expected a ConfigError for:\n" << yaml;
  return "";
}

}  // namespace

TEST(ConfigLoader, PresetsFillInModelAndData) {
  Config c = load_config_text(kResnet, "exp.yaml");
  EXPECT_EQ(c.name, "exp");
  EXPECT_EQ(c.model.preset, "resnet20");
  EXPECT_EQ(c.model.family, "resnet");
  EXPECT_EQ(c.model.layers, (std::vector<int64_t>{3, 3, 3}));
  EXPECT_EQ(c.data.image_size, 28);
  EXPECT_EQ(c.data.channels, 1);
  EXPECT_EQ(c.data.num_classes, 10);
  EXPECT_EQ(c.data.class_names.size(), 10u);
  EXPECT_EQ(c.optim.name, "adamw");  // struct default
}

TEST(ConfigLoader, PrecedenceDefaultsPresetExperimentSet) {
  // preset says depth 6; experiment says 4; --set says 2 -> 2. embed_dim only in preset.
  Config c = load_config_text("model: {preset: vit_lite_p4, depth: 4, num_heads: 2}\ndata: {preset: fashion_mnist}\n",
                              "exp.yaml", {"model.depth=2"});
  EXPECT_EQ(c.model.depth, 2);
  EXPECT_EQ(c.model.num_heads, 2);
  EXPECT_EQ(c.model.embed_dim, 128);
  EXPECT_EQ(c.model.mlp_ratio, 2.0);
  Config d = load_config_text("model: {preset: vit_lite_p4, depth: 4}\ndata: {preset: fashion_mnist}\n", "exp.yaml");
  EXPECT_EQ(d.model.depth, 4);
}

TEST(ConfigLoader, SetValuesAreParsedAsYaml) {
  Config c = load_config_text(kResnet, "exp.yaml",
                              {"model.layers=[1, 1, 1]", "optim.lr=0.05", "data.hflip=true", "runtime.threads=3",
                               "train.steps=~", "name=custom"});
  EXPECT_EQ(c.model.layers, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_DOUBLE_EQ(c.optim.lr, 0.05);
  EXPECT_TRUE(c.data.hflip);
  EXPECT_EQ(c.runtime.threads, 3);
  EXPECT_EQ(c.train.steps, 0);
  EXPECT_EQ(c.name, "custom");
}

TEST(ConfigLoader, SetCanSwitchThePreset) {
  Config c = load_config_text(kResnet, "exp.yaml", {"model.preset=resnet56"});
  EXPECT_EQ(c.model.layers, (std::vector<int64_t>{9, 9, 9}));
}

TEST(ConfigLoader, ThreadsAuto) {
  Config c = load_config_text(std::string(kResnet) + "runtime: {threads: auto}\n", "exp.yaml");
  EXPECT_EQ(c.runtime.threads, 0);
}

TEST(ConfigLoader, ResolvedYamlRoundTrips) {
  Config c = load_config_text(kVit, "exp.yaml", {"optim.lr=0.1", "model.pool=gap", "data.train_per_class=7"});
  const std::string yaml = to_yaml(c);
  LoadOptions no_presets;
  no_presets.resolve_presets = false;
  Config back = load_config_text(yaml, "config.yaml", {}, no_presets);
  EXPECT_EQ(to_yaml(back), yaml);
  EXPECT_EQ(back.model.pool, "gap");
  EXPECT_EQ(back.data.train_per_class, 7);
  EXPECT_DOUBLE_EQ(back.optim.lr, 0.1);
  // Family-specific keys of the other family are not written.
  EXPECT_EQ(yaml.find("  layers:"), std::string::npos);
}

TEST(ConfigErrors, UnknownKeyNamesFileLineKeyAndSuggestion) {
  const std::string msg = error_of("model: {preset: vit_lite_p4}\ndata: {preset: fashion_mnist}\noptim:\n  lr: 0.1\n  wieght_decay: 0.1\n");
  EXPECT_NE(msg.find("exp.yaml:5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("optim.wieght_decay"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'weight_decay'"), std::string::npos) << msg;
}

TEST(ConfigErrors, UnknownTopLevelSection) {
  const std::string msg = error_of(std::string(kResnet) + "trian: {epochs: 3}\n");
  EXPECT_NE(msg.find("exp.yaml:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'train'"), std::string::npos) << msg;
}

TEST(ConfigErrors, WrongTypeNamesExpectedType) {
  const std::string msg = error_of(std::string(kResnet) + "train:\n  epochs: three\n");
  EXPECT_NE(msg.find("exp.yaml:4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("train.epochs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected an integer"), std::string::npos) << msg;
  EXPECT_NE(msg.find("three"), std::string::npos) << msg;
}

TEST(ConfigErrors, OutOfRange) {
  const std::string msg = error_of(kResnet, {"data.train_fraction=1.5"});
  EXPECT_NE(msg.find("--set data.train_fraction=1.5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(0.0, 1.0]"), std::string::npos) << msg;
}

TEST(ConfigErrors, BadChoiceListsChoicesAndSuggests) {
  const std::string msg = error_of(std::string(kResnet) + "optim: {name: adamm}\n");
  EXPECT_NE(msg.find("exp.yaml:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("optim.name"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'adamw'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sgd, adamw"), std::string::npos) << msg;
}

TEST(ConfigErrors, PatchSizeMustDivideImage) {
  const std::string msg = error_of("model:\n  preset: vit_lite_p4\n  patch_size: 5\ndata: {preset: fashion_mnist}\n");
  EXPECT_NE(msg.find("exp.yaml:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.patch_size"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not divide the image size 28"), std::string::npos) << msg;
}

TEST(ConfigErrors, EmbedDimMustBeDivisibleByHeads) {
  const std::string msg = error_of(kVit, {"model.num_heads=5"});
  EXPECT_NE(msg.find("--set model.num_heads=5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not divisible by num_heads 5"), std::string::npos) << msg;
}

TEST(ConfigErrors, UnknownPresetSuggests) {
  const std::string msg = error_of("model: {preset: resnet2}\ndata: {preset: fashion_mnist}\n");
  EXPECT_NE(msg.find("exp.yaml:1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.preset"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'resnet20'"), std::string::npos) << msg;
}

TEST(ConfigErrors, KeyOfAnotherFamily) {
  const std::string msg = error_of("model:\n  preset: resnet20\n  patch_size: 4\ndata: {preset: fashion_mnist}\n");
  EXPECT_NE(msg.find("exp.yaml:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("model.patch_size applies to family 'vit'"), std::string::npos) << msg;
}

TEST(ConfigErrors, MissingFamilyAndData) {
  EXPECT_NE(error_of("data: {preset: fashion_mnist}\n").find("model.family: missing"), std::string::npos);
  EXPECT_NE(error_of("model: {preset: resnet20}\n").find("data.image_size: missing"), std::string::npos);
}

TEST(ConfigErrors, MalformedOverridesAndYaml) {
  EXPECT_NE(error_of(kResnet, {"model.depth"}).find("expected KEY=VALUE"), std::string::npos);
  EXPECT_NE(error_of(kResnet, {"modle.depth=3"}).find("did you mean 'model'"), std::string::npos);
  const std::string msg = error_of("model: {preset: resnet20\ndata: [\n");
  EXPECT_NE(msg.find("YAML syntax error"), std::string::npos) << msg;
  EXPECT_NE(msg.find("exp.yaml:"), std::string::npos) << msg;
}

TEST(ConfigErrors, ListLengthsChecked) {
  EXPECT_NE(error_of(kResnet, {"model.widths=[16, 32]"}).find("one width per stage"), std::string::npos);
  EXPECT_NE(error_of(kResnet, {"data.mean=[0.1, 0.2]"}).find("expected 1 values"), std::string::npos);
}

TEST(ConfigErrors, DeviceSpec) {
  const std::string msg = error_of(kResnet, {"runtime.device=gpu"});
  EXPECT_NE(msg.find("runtime.device"), std::string::npos) << msg;
  EXPECT_NE(msg.find("auto, cpu, cuda or cuda:N"), std::string::npos) << msg;
}

TEST(ConfigErrors, MissingFile) {
  try {
    load_config("/nonexistent/exp.yaml");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/exp.yaml"), std::string::npos);
  }
}

TEST(ConfigErrors, DuplicateSectionOrKey) {
  const std::string msg = error_of(std::string(kResnet) + "data: {train_fraction: 0.5}\n");
  EXPECT_NE(msg.find("exp.yaml:3: duplicate section 'data'"), std::string::npos) << msg;
  const std::string msg2 = error_of(std::string(kResnet) + "optim:\n  lr: 0.1\n  lr: 0.2\n");
  EXPECT_NE(msg2.find("duplicate key 'optim.lr'"), std::string::npos) << msg2;
}

TEST(ConfigErrors, SinCosNeedsWidthDivisibleByFour) {
  const std::string msg = error_of(kVit, {"model.embed_dim=130", "model.num_heads=2", "model.pos_embed=sincos2d"});
  EXPECT_NE(msg.find("model.pos_embed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("divisible by 4"), std::string::npos) << msg;
}

TEST(ConfigErrors, AttentionWindowMustBeOdd) {
  const std::string msg = error_of(kVit, {"model.attn_window=4"});
  EXPECT_NE(msg.find("model.attn_window"), std::string::npos) << msg;
  EXPECT_NE(msg.find("odd window size"), std::string::npos) << msg;
}

TEST(ConfigErrors, HybridTokenizerKeysAndFeatureMapDivisibility) {
  // A key of the other tokenizer is named, with where the tokenizer was chosen.
  std::string msg = error_of("model:\n  preset: cct_lite\n  layers: [1, 1]\ndata: {preset: fashion_mnist}\n");
  EXPECT_NE(msg.find("model.layers"), std::string::npos) << msg;
  EXPECT_NE(msg.find("applies to the resnet tokenizer, but model.tokenizer is 'conv'"), std::string::npos) << msg;
  EXPECT_NE(error_of("model: {preset: cct_lite}\ndata: {preset: fashion_mnist}\n", {"model.tokenizer_kernel=4"})
                .find("expected an odd kernel size"),
            std::string::npos);
  EXPECT_NE(error_of("model: {preset: cct_lite}\ndata: {preset: fashion_mnist}\n", {"model.widths=[]"})
                .find("the conv tokenizer needs at least one layer"),
            std::string::npos);
  msg = error_of("model: {preset: vit_hybrid_lite}\ndata: {preset: fashion_mnist}\n", {"model.tokenizer_kernel=5"});
  EXPECT_NE(msg.find("model.tokenizer_kernel: applies to the conv tokenizer"), std::string::npos) << msg;
  // The patch size must divide the CNN's feature map (28 -> 14 -> 7 for two halvings).
  msg = error_of("model: {preset: vit_hybrid_lite}\ndata: {preset: fashion_mnist}\n", {"model.patch_size=2"});
  EXPECT_NE(msg.find("does not divide the 7x7 feature map the resnet tokenizer makes of 28 px images"),
            std::string::npos) << msg;
  // Transformer keys apply to hybrids, ResNet-only keys do not apply to ViTs.
  EXPECT_NE(error_of(kVit, {"model.stem=cifar"}).find("applies to family 'resnet' or 'hybrid'"), std::string::npos);
  EXPECT_NE(error_of("model: {preset: resnet20}\ndata: {preset: fashion_mnist}\n", {"model.cnn_norm=none"})
                .find("applies to family 'hybrid'"),
            std::string::npos);
}

TEST(ConfigErrors, GpsaAndResidualGainCombinations) {
  EXPECT_NE(error_of(kVit, {"model.gpsa_layers=9"}).find("expected at most model.depth"), std::string::npos);
  EXPECT_NE(error_of(kVit, {"model.gpsa_layers=2", "model.attn_window=3"}).find("cannot be combined"),
            std::string::npos);
  EXPECT_NE(error_of(kVit, {"model.rezero=true", "model.layer_scale_init=0.1"}).find("choose one residual gain"),
            std::string::npos);
}

TEST(ConfigLoader, HybridYamlRoundTripsWithoutTheOtherTokenizersKeys) {
  for (const char* preset : {"cct_lite", "coatnet_lite"}) {
    const Config c = load_config_text(std::string("model: {preset: ") + preset + "}\ndata: {preset: fashion_mnist}\n",
                                      "exp.yaml");
    const std::string yaml = to_yaml(c);
    LoadOptions no_presets;
    no_presets.resolve_presets = false;
    EXPECT_EQ(to_yaml(load_config_text(yaml, "config.yaml", {}, no_presets)), yaml) << preset;
  }
}

TEST(ConfigErrors, DataFormatKeys) {
  const std::string synth = "model: {preset: resnet20}\ndata: {preset: synth_texture}\n";
  EXPECT_EQ(load_config_text(synth, "exp.yaml").data.task, "texture");
  EXPECT_NE(error_of(synth, {"data.num_classes=3"}).find("the synthetic task 'texture' has 4 classes"),
            std::string::npos);
  EXPECT_NE(error_of(synth, {"data.task=shapes"}).find("expected one of: texture, same_different"), std::string::npos);
  EXPECT_NE(error_of(synth, {"data.image_size=6"}).find("synthetic tasks need images of at least 12 px"),
            std::string::npos);
  // A key of another format names the format and where it was set.
  std::string msg = error_of(kResnet, {"data.task=texture"});
  EXPECT_NE(msg.find("data.task: does not apply to data.format 'idx'"), std::string::npos) << msg;
  msg = error_of(kResnet, {"data.format=cifar10"});
  EXPECT_NE(msg.find("data.train_images: does not apply to data.format 'cifar10'"), std::string::npos) << msg;
  EXPECT_NE(error_of(kResnet, {"data.mean=[]"}).find("data.std: expected as many values as data.mean"),
            std::string::npos);
  EXPECT_NE(error_of(kResnet, {"data.random_resized_crop=[0.5, 0.2]"}).find("0 < min <= max <= 1"), std::string::npos);
  // Resolved configs of every format reload (only the keys of their own format are written).
  LoadOptions no_presets;
  no_presets.resolve_presets = false;
  const std::string yaml = to_yaml(load_config_text(synth, "exp.yaml"));
  EXPECT_EQ(yaml.find("train_images"), std::string::npos);
  EXPECT_EQ(to_yaml(load_config_text(yaml, "config.yaml", {}, no_presets)), yaml);
}

TEST(ConfigErrors, RunNamesStayOneFolderUnderRuns) {
  for (const char* bad : {"..", ".", "/tmp/abs", "a/b", "''"}) {
    const std::string msg = error_of(std::string("name: ") + bad + "\n" + kResnet);
    EXPECT_NE(msg.find("exp.yaml:1: name:"), std::string::npos) << bad << ": " << msg;
    EXPECT_NE(msg.find("is not a run name"), std::string::npos) << bad << ": " << msg;
  }
  EXPECT_NE(error_of(std::string("name: \"a\\tb\"\n") + kResnet).find("name: expected printable UTF-8 text, got a "
                                                                       "control character (0x09) at byte 2"),
            std::string::npos);
  EXPECT_NE(error_of(std::string("name: a\xff\n") + kResnet).find("invalid UTF-8 at byte 2"), std::string::npos);
  EXPECT_NE(error_of(kResnet, {"name=.."}).find("--set name=..: name:"), std::string::npos);
  // Every string key is checked, not only the name.
  EXPECT_NE(error_of(kResnet, {"data.class_names=[a,b,c,d,e,f,g,h,i,\"j\\x01\"]"}).find("data.class_names"),
            std::string::npos);
  EXPECT_NE(error_of(kResnet, {"data.root=/x\xfe"}).find("data.root: expected printable UTF-8"), std::string::npos);
  EXPECT_EQ(load_config_text(std::string("name: K\xc3\xa4se-1\n") + kResnet, "exp.yaml").name, "K\xc3\xa4se-1");
}

TEST(ConfigErrors, NonsenseValuesAreErrorsNotDefaults) {
  const std::string steps = error_of(kResnet, {"train.steps=0"});
  EXPECT_NE(steps.find("train.steps: expected an integer >= 1 or ~ (none), got 0"), std::string::npos) << steps;
  EXPECT_EQ(load_config_text(kResnet, "exp.yaml", {"train.steps=~"}).train.steps, 0);
  const std::string mean = error_of(kResnet, {"data.mean=[.nan]", "data.std=[1]"});
  EXPECT_NE(mean.find("data.mean: expected finite numbers, got '.nan'"), std::string::npos) << mean;
  EXPECT_NE(error_of(kResnet, {"data.std=[.inf]", "data.mean=[0]"}).find("data.std"), std::string::npos);
  EXPECT_NE(error_of(kResnet, {"data.workers=1000000"}).find("data.workers: expected an integer <= 256"),
            std::string::npos);
  EXPECT_NE(error_of(kResnet, {"data.crop_padding=100000"}).find("data.crop_padding: expected at most data.image_size"),
            std::string::npos);
}

TEST(ConfigErrors, HostileFilesAreBoundedAndSpecialFilesRefused) {
  // A few lines of nested aliases stand for 10^9 values: counted as expanded, and refused.
  std::string yaml = std::string(kResnet) + "train:\n  epochs: 1\nx0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    yaml += fmt::format("x{}: &a{} [", i, i);  // not "x" + std::string&&: a false GCC 12 -O3 warning
    for (int k = 0; k < 10; ++k) yaml += std::string(k ? ", " : "") + "*a" + std::to_string(i - 1);
    yaml += "]\n";
  }
  const std::string b = error_of(yaml);
  EXPECT_NE(b.find("expands to more than"), std::string::npos) << b;
  TempDir dir;
  write_text(dir / "big.yaml", std::string(kResnet) + std::string(1100000, '#'));
  try {
    load_config((dir / "big.yaml").string());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("big.yaml: 1.05 MiB is larger than the 1 MiB limit for config files"),
              std::string::npos)
        << e.what();
  }
  for (const std::string& special : {std::string("/dev/zero"), dir.path().string()}) {
    try {
      load_config(special);
      FAIL() << special;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(special + ": is a"), std::string::npos) << e.what();
    }
  }
  const std::string preset = error_of("model: {preset: /dev/zero}\ndata: {preset: fashion_mnist}\n");
  EXPECT_NE(preset.find("/dev/zero: is a character device"), std::string::npos) << preset;
}

TEST(ConfigLoader, EvalTestFinalNeedsAValidationSplit) {
  const std::string msg = error_of(kResnet, {"train.eval_test=final"});
  EXPECT_NE(msg.find("train.eval_test"), std::string::npos) << msg;
  EXPECT_NE(msg.find("data.val_fraction > 0"), std::string::npos) << msg;
  EXPECT_EQ(load_config_text(kResnet, "exp.yaml", {"train.eval_test=final", "data.val_fraction=0.1"}).train.eval_test,
            "final");
  EXPECT_NE(error_of(kResnet, {"train.eval_test=last"}).find("not a valid choice"), std::string::npos);
  // A validation split of N per class serves as well; the two ways of asking for one exclude each other.
  EXPECT_EQ(load_config_text(kResnet, "exp.yaml", {"train.eval_test=final", "data.val_per_class=10"}).train.eval_test,
            "final");
  const std::string both = error_of(kResnet, {"data.val_fraction=0.1", "data.val_per_class=10"});
  EXPECT_NE(both.find("data.val_per_class: set either data.val_fraction or data.val_per_class, not both"),
            std::string::npos)
      << both;
}

// Where and how a run executes is marked on the field table's rows, not listed by hand:
// a new knob is part of the experiment unless declared otherwise. Changing any of those
// keys leaves the identity alone; changing another key (the seed, a learning rate) does not.
TEST(ConfigLoader, ExecutionKeysAreLeftOutOfTheIdentity) {
  EXPECT_EQ(execution_keys(),
            (std::vector<std::string>{"data.root", "data.workers", "train.log_every", "train.tensorboard",
                                      "runtime.threads", "runtime.device", "runtime.memory_format", "runtime.kernels",
                                      "runtime.dist_backend", "runtime.dist_timeout_s", "runtime.max_memory_gb"}));
  const std::string base = "model: {preset: resnet20}\ndata: {preset: fashion_mnist}\n";
  const std::string identity = identity_yaml(load_config_text(base, "a.yaml"));
  for (const std::string set : {"data.root=/elsewhere", "data.workers=3", "train.log_every=7", "train.tensorboard=false",
                                "runtime.threads=1", "runtime.device=cpu", "runtime.memory_format=contiguous",
                                "runtime.kernels=reference", "runtime.dist_backend=gloo", "runtime.dist_timeout_s=9",
                                "runtime.max_memory_gb=3"})
    EXPECT_EQ(identity_yaml(load_config_text(base, "a.yaml", {set})), identity) << set;
  for (const std::string set : {"runtime.seed=1", "optim.lr=0.5", "model.widths=[8, 16, 32]", "data.train_fraction=0.5"})
    EXPECT_NE(identity_yaml(load_config_text(base, "a.yaml", {set})), identity) << set;
  EXPECT_EQ(identity.find("threads:"), std::string::npos) << identity;
  EXPECT_NE(identity.find("seed: 0"), std::string::npos) << identity;
}
