#pragma once
// Swept values as text, shared by the sweep file reader (spec.cpp) and the report:
// whether a value is a number, and the forms it takes in run and file names. No yaml-cpp.
#include <string>

namespace biaslab::sweep {

/// The whole of `s` read as a number (strtod): false for "", "1x" or "[1, 2]". The
/// number goes to `out` when given.
bool parse_number(const std::string& s, double* out = nullptr);

/// Two YAML scalars denote the same value (numbers compared as numbers).
bool same_value(const std::string& a, const std::string& b);

/// A value in a run name: letters, digits and '.', '_', '+', '-' kept, every run of
/// other characters one '-' (none leading or trailing); "none" when nothing is left.
std::string name_part(const std::string& value);

/// A value as part of a file name (and a Markdown link): every character other than
/// letters, digits and '.', '_', '+', '-' (a '/', a space, a bracket) becomes '-'.
std::string file_part(const std::string& value);

}  // namespace biaslab::sweep
