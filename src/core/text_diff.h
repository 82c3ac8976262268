#pragma once
// The first line where two texts differ (resolved configs, sweep plans), for messages
// that say what changed.
#include <string>

namespace biaslab {

struct LineDifference {
  bool found = false;
  std::string section;  ///< the last unindented line of `a` up to it (YAML: its top-level key)
  std::string a, b;     ///< the two lines ("" past the end of a text)
};

LineDifference first_line_difference(const std::string& a, const std::string& b);

/// "in SECTION NAME_A 'line a', NAME_B 'line b'"; "" when the texts are equal.
std::string describe_difference(const LineDifference& d, const std::string& name_a, const std::string& name_b);

}  // namespace biaslab
