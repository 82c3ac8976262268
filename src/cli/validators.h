#pragma once
// Command-line value checks with messages in biaslab's words (CLI11's own PositiveNumber
// says "Value 0 not in range 0.000000 to 1.79e308").
#include <CLI/CLI.hpp>

#include <string>

namespace biaslab::cli {

/// An integer >= `min`.
inline CLI::Validator at_least(long long min) {
  return CLI::Validator(
      [min](std::string& value) -> std::string {
        try {
          size_t used = 0;
          const long long v = std::stoll(value, &used);
          if (used == value.size() && v >= min) return "";
        } catch (const std::exception&) {
        }
        return "expected an integer >= " + std::to_string(min) + ", got '" + value + "'";
      },
      "INT>=" + std::to_string(min));
}

}  // namespace biaslab::cli
