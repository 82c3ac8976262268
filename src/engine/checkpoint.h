#pragma once
// Checkpoints: model parameters and buffers, optimizer state (with each group's
// options), the EMA weights, every RNG state that affects training, the training
// state (train_state.h) and the resolved config.
//
// File layout: a 32-byte header -- the magic "BIASLAB-CKPT\0\0\0\0", format version
// (u32), payload size (u64), CRC-32 of the payload (u32) -- then the payload, a
// regular LibTorch archive. The checksum is verified before anything is loaded.
// Files are written atomically (temporary file, fsync, rename, fsync of the folder).
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <string>

namespace biaslab {

struct CheckpointContents {
  std::string config_yaml;      ///< the resolved config
  std::string state_json;       ///< TrainState (train_state.h)
  std::string biaslab_version;  ///< filled in on save
  std::string torch_version;    ///< filled in on save
};

/// Writes atomically. `optimizer` and `ema` may be null.
void save_checkpoint(const std::string& path, const torch::nn::Module& model, const torch::optim::Optimizer* optimizer,
                     const torch::nn::Module* ema, const CheckpointContents& contents);

/// Verifies the file and reads the config and state (no tensors are loaded).
CheckpointContents read_checkpoint_meta(const std::string& path);

/// True when `path` is a regular file that starts like a biaslab checkpoint (its magic);
/// nothing else is read.
bool is_checkpoint_file(const std::string& path);

/// Verifies the file, then loads every parameter and buffer of `model` (all must be
/// present with the same shapes), and `optimizer` / `ema` when given. With
/// `restore_rng`, the RNG states saved with it become the current ones.
/// Throws CheckpointError naming the file.
CheckpointContents load_checkpoint(const std::string& path, torch::nn::Module& model,
                                   torch::optim::Optimizer* optimizer, torch::nn::Module* ema = nullptr,
                                   bool restore_rng = false);

/// A 64-bit FNV-1a hash (16 hex digits) of every parameter's and buffer's name and
/// bytes, in registration order: equal fingerprints mean bitwise equal weights.
/// (Checkpoint files themselves are not byte-reproducible: LibTorch keys optimizer
/// state by tensor addresses.)
std::string weights_fingerprint(const torch::nn::Module& module);

}  // namespace biaslab
