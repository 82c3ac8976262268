#include "config/experiment_identity.h"

#include "config/loader.h"
#include "core/errors.h"

namespace biaslab {

std::string experiment_identity(const std::string& config_yaml, const std::filesystem::path& dir) {
  LoadOptions lo;
  lo.resolve_presets = false;
  Config c;
  try {
    c = load_config_text(config_yaml, (dir / "config.yaml").string(), {}, lo);
  } catch (const ConfigError& e) {
    throw CheckpointError(dir.string() + ": the stored config no longer loads: " + e.what());
  }
  c.data.root.clear();
  c.data.workers = 0;
  c.runtime.threads = 0;
  c.runtime.device = "auto";
  c.runtime.memory_format = "auto";
  c.runtime.kernels = "auto";
  c.runtime.dist_backend = "auto";
  c.runtime.dist_timeout_s = 300;
  c.runtime.max_memory_gb = 0;
  c.train.log_every = 1;
  c.train.tensorboard = true;
  return to_yaml(c);
}

}  // namespace biaslab
