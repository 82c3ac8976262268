#pragma once
// The cells of one line of biaslab's own CSV files (metrics.csv, timing.csv, ...): split
// at every comma, a trailing comma giving a last empty cell. No quoting: these files
// hold numbers and fixed names only.
#include <sstream>
#include <string>
#include <vector>

namespace biaslab {

inline std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

}  // namespace biaslab
