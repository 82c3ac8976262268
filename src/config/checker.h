#pragma once
// Cross-field rules of a config, checked after every key is read: the interface the
// rules see (where a key's value came from, whether it was set, the error naming it), so
// a model family's rules can live beside the family (models/*_checks.cpp) without the
// loader's YAML.
#include <string>

#include "core/errors.h"

namespace biaslab {

class ConfigChecker {
 public:
  virtual ~ConfigChecker() = default;
  /// "file:line" or "--set ..." of the key's value; "(default)" when it was not set.
  virtual std::string where(const std::string& key) const = 0;
  /// ConfigError "WHERE: KEY: MESSAGE".
  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw ConfigError(where(key) + ": " + key + ": " + message);
  }
  void require(bool ok, const std::string& key, const std::string& message) const {
    if (!ok) fail(key, message);
  }
};

}  // namespace biaslab
