#include "core/text_diff.h"

#include <sstream>

namespace biaslab {

LineDifference first_line_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  LineDifference d;
  while (true) {
    const bool ga = bool(std::getline(sa, d.a)), gb = bool(std::getline(sb, d.b));
    if (!ga) d.a.clear();
    if (!gb) d.b.clear();
    if (!ga && !gb) return LineDifference{};
    if (!d.a.empty() && d.a[0] != ' ') d.section = d.a;
    if (ga != gb || d.a != d.b) {
      d.found = true;
      return d;
    }
  }
}

std::string describe_difference(const LineDifference& d, const std::string& name_a, const std::string& name_b) {
  if (!d.found) return "";
  return "in " + d.section + " " + name_a + " '" + d.a + "', " + name_b + " '" + d.b + "'";
}

}  // namespace biaslab
