#pragma once
// Plain typed configuration structs. YAML never leaves src/config: everything else
// receives these structs (and modules receive their own Options built from them).
// Field names are exactly the YAML keys.
#include <cstdint>
#include <string>
#include <vector>

namespace biaslab {

struct ModelConfig {
  std::string preset;            ///< models/<preset>.yaml the values came from (informational)
  std::string family;            ///< resnet | vit | hybrid (ViT with a CNN tokenizer) (required)
  std::string norm;              ///< resnet: batchnorm|groupnorm|layernorm|none; vit, hybrid: layernorm|batchnorm|rmsnorm|none ("" = family default)
  bool residual = true;          ///< skip connections on/off (hybrid: in the CNN and the transformer)
  // ResNet, and the hybrid's resnet tokenizer
  std::string stem = "cifar";    ///< cifar (3x3 conv) | imagenet (7x7 stride-2 conv + max-pool)
  std::string block = "basic";   ///< basic | bottleneck
  std::vector<int64_t> layers = {3, 3, 3};      ///< blocks per stage
  std::vector<int64_t> widths = {16, 32, 64};   ///< channels per stage
  bool zero_init_residual = false;  ///< last BatchNorm of each block starts at zero
  // Hybrid: the CNN that turns the image into a feature map, then patch tokens
  std::string tokenizer = "resnet";  ///< resnet (ResNet stem + stages, ViT-hybrid) | conv (CCT conv-ReLU-maxpool layers)
  std::string cnn_norm = "batchnorm";  ///< norm of the resnet tokenizer: batchnorm|groupnorm|layernorm|none
  int64_t tokenizer_kernel = 3;  ///< conv tokenizer kernel size
  // ViT, and the hybrid's transformer
  int64_t patch_size = 4;
  int64_t embed_dim = 192;
  int64_t depth = 6;
  int64_t num_heads = 3;
  double mlp_ratio = 2.0;
  bool qkv_bias = true;
  double drop_rate = 0.0;        ///< dropout after embeddings, in MLPs and projections
  double attn_drop_rate = 0.0;   ///< dropout on attention weights
  std::string pool = "cls";      ///< cls (class token) | gap (mean of patch tokens) | seq (CCT attention pooling)
  std::string norm_placement = "pre";  ///< pre | post
  std::string pos_embed = "learned";   ///< learned | sincos2d | none | relative
  double drop_path_rate = 0.0;   ///< stochastic depth at the last block (linear ramp from 0)
  double layer_scale_init = 0.0; ///< LayerScale initial gain; 0 = off
  int64_t attn_window = 0;       ///< 0 = global attention; k (odd) = k x k patch neighbourhoods
  int64_t gpsa_layers = 0;       ///< leading blocks with ConViT gated positional self-attention
  double locality_strength = 1.0;  ///< GPSA: initial sharpness of the convolution-like positional attention
  std::string attn_scale = "sqrt_dk";  ///< sqrt_dk (scores q.k / sqrt(head width)) | none (unscaled)
  double attn_temperature = 1.0;       ///< softmax temperature: scores divided by it (> 0)
  bool rezero = false;           ///< ReZero: a scalar residual gain from 0 on every branch
  std::string residual_stream = "fp32";  ///< fp32 | autocast: the tokens between blocks in bf16 under bf16 autocast
  // Start from weights saved elsewhere (export/weights.h): a torch.save'd dict of tensors
  // or a TorchScript module, torchvision / timm / biaslab names. Fresh runs only.
  std::string init_from;         ///< "" = the family's own initialisation
  std::vector<std::string> init_skip;  ///< key prefixes left at their initialisation (e.g. [head] for new classes)
};

struct DataConfig {
  std::string preset;            ///< data/<preset>.yaml the values came from (informational)
  std::string format = "idx";    ///< idx | cifar10 | cifar100 | folder | synthetic
  std::string root;              ///< folder holding the files (idx, cifar*), or the image folder
  std::string train_images;      ///< idx
  std::string train_labels;
  std::string test_images;
  std::string test_labels;
  std::vector<std::string> train_files;  ///< cifar*: record files ([] = the format's standard names)
  std::vector<std::string> test_files;
  std::string label_kind = "fine";   ///< cifar100: fine (100 classes) | coarse (20 superclasses)
  std::string on_bad_image = "error";  ///< folder: error | skip (undecodable images)
  double test_holdout = 0.2;     ///< folder without a test/ split: stratified share held out as test
  std::string task;              ///< synthetic: texture | same_different
  int64_t train_size = 10000;    ///< synthetic: images generated per split
  int64_t test_size = 2000;
  int64_t generator_seed = 0;    ///< synthetic: seed of the images themselves
  int64_t image_size = 0;        ///< side length fed to the model; images are resized if needed
  int64_t channels = 0;
  int64_t num_classes = 0;
  std::vector<double> mean;      ///< per-channel, on the [0, 1] scale; [] = computed from the training subset
  std::vector<double> std;       ///< likewise
  std::vector<std::string> class_names;
  double train_fraction = 1.0;   ///< stratified share of the training set (0 < f <= 1)
  int64_t train_per_class = 0;   ///< 0 = use train_fraction; else N images per class
  int64_t subset_seed = 0;       ///< seed of the subset draws, independent of runtime.seed
  double val_fraction = 0.0;     ///< stratified share of the training set held out for validation
  /// When > 0 (instead of val_fraction): N images of each class held out for validation from
  /// the end of its permutation, so the training subset is the one a run without validation
  /// draws (nested across sizes and validation sizes), and the split can follow the subset.
  int64_t val_per_class = 0;
  bool has_val_split() const { return val_fraction > 0.0 || val_per_class > 0; }
  double test_fraction = 1.0;    ///< stratified share of the test set (smoke tests only)
  std::vector<double> random_resized_crop;  ///< [min, max] area share; [] = off
  int64_t crop_padding = 0;      ///< random crop after zero padding by this many pixels; 0 = off
  bool hflip = false;            ///< random horizontal flip
  bool trivial_augment = false;  ///< TrivialAugment: one random op per image
  double random_erasing = 0.0;   ///< probability per image
  double mixup_alpha = 0.0;      ///< Mixup Beta(alpha, alpha); 0 = off
  double cutmix_alpha = 0.0;     ///< CutMix Beta(alpha, alpha); 0 = off
  int64_t workers = 0;           ///< background threads preparing training batches (results do not depend on it)
};

struct OptimConfig {
  std::string name = "adamw";    ///< sgd | adamw
  double lr = 1.0e-3;
  double weight_decay = 0.05;    ///< not applied to norm weights, biases, pos_embed, cls_token
  double momentum = 0.9;         ///< sgd
  bool nesterov = false;         ///< sgd
  std::vector<double> betas = {0.9, 0.999};  ///< adamw
  double eps = 1.0e-8;           ///< adamw
};

struct SchedConfig {
  std::string name = "cosine";   ///< cosine | constant
  int64_t warmup_steps = 0;      ///< linear warm-up from 0 to optim.lr
  double min_lr = 0.0;           ///< cosine floor
};

struct TrainConfig {
  int64_t epochs = 10;
  int64_t steps = 0;             ///< when > 0, stop after this many optimizer steps
  int64_t batch_size = 128;
  int64_t eval_batch_size = 512;
  int64_t eval_every = 1;        ///< evaluate every N epochs (and always after the last one)
  std::string eval_test = "every";  ///< every | final: the test set at every evaluation, or at the last only
  /// Training images evaluated (eval mode, no augmentation) at every evaluation: a fixed
  /// stratified sample of the run's training subset, all of it when smaller; 0 = off.
  int64_t train_eval_size = 5000;
  std::string precision = "auto";  ///< auto | fp32 | bf16 (autocast) | fp16 (CUDA autocast + loss scaling); auto: engine/precision.h
  int64_t checkpoint_every = 0;  ///< also write `last` every N steps; 0 = at epoch end only
  int64_t save_top_k = 0;        ///< keep the k best epoch-end checkpoints (epoch-NNNN.pt)
  std::string nonfinite = "abort";  ///< abort | skip: what a NaN/Inf loss or gradient does
  int64_t max_consecutive_skips = 10;  ///< with skip: abort after this many in a row
  double ema_decay = 0.0;        ///< EMA of the weights; 0 = off
  int64_t early_stop_patience = 0;  ///< stop after N evaluations without a better val_acc; 0 = off
  int64_t early_stop_min_steps = 0;  ///< early stopping never stops a run before this many steps
  double label_smoothing = 0.0;
  double grad_clip = 0.0;        ///< max global gradient norm; 0 = off
  int64_t log_every = 50;        ///< steps between log lines when stderr is not a terminal
  bool tensorboard = true;       ///< TensorBoard event files under RUN_DIR/tensorboard/
};

struct RuntimeConfig {
  int64_t threads = 0;           ///< 0 = auto (all cores)
  int64_t seed = 0;
  std::string device = "auto";   ///< auto | cpu | cuda | cuda:N
  std::string memory_format = "auto";  ///< auto | channels_last | contiguous (engine/memory_format.h)
  std::string kernels = "auto";        ///< auto | fused | reference (core/runtime.h)
  std::string dist_backend = "auto";   ///< auto | gloo | nccl (distributed runs; distributed/communicator.h)
  int64_t dist_timeout_s = 300;        ///< a collective waiting longer than this fails the run
  double max_memory_gb = 0.0;          ///< bound of a run's estimated memory (engine/memory_budget.h); 0 = this machine's RAM
};

struct Config {
  std::string name;              ///< run name (default: the config file's stem)
  ModelConfig model;
  DataConfig data;
  OptimConfig optim;
  SchedConfig sched;
  TrainConfig train;
  RuntimeConfig runtime;
};

}  // namespace biaslab
