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
  return identity_yaml(c);
}

}  // namespace biaslab
