#include "sweep/values.h"

#include <cctype>
#include <cstdlib>

namespace biaslab::sweep {
namespace {

// The characters a run or file name keeps as they are.
bool name_char(char c) { return std::isalnum((unsigned char)c) || c == '.' || c == '_' || c == '+' || c == '-'; }

}  // namespace

bool parse_number(const std::string& s, double* out) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0') return false;
  if (out) *out = v;
  return true;
}

bool same_value(const std::string& a, const std::string& b) {
  if (a == b) return true;
  double x = 0, y = 0;
  return parse_number(a, &x) && parse_number(b, &y) && x == y;
}

std::string name_part(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (name_char(c)) out += c;
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "none" : out;
}

std::string file_part(const std::string& value) {
  std::string out;
  for (char c : value) out += name_char(c) ? c : '-';
  return out;
}

}  // namespace biaslab::sweep
