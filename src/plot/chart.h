#pragma once
// Charts as PNG files, drawn with OpenCV: a line chart with error bars (optionally a
// log x axis) and a grouped bar chart with error bars. Title, axis labels and a legend
// on every chart; the colour of series i is the same in every chart (tab10 order).
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

namespace biaslab::plot {

struct Line {
  std::string label;
  std::vector<double> x, y;
  std::vector<double> err;  ///< half-length of the error bar at each point (empty = none)
};

struct LineChart {
  std::string title, x_label, y_label;
  bool log_x = false;
  /// Tick labels at these x values (empty: chosen automatically).
  std::vector<double> x_ticks;
  /// Limits the y axis never passes (e.g. 0 and 100 for accuracies); NaN = none.
  double y_floor = std::numeric_limits<double>::quiet_NaN(), y_ceil = std::numeric_limits<double>::quiet_NaN();
  std::vector<Line> lines;
};

struct BarChart {
  std::string title, y_label;
  std::vector<std::string> groups;      ///< one cluster of bars per group
  std::vector<std::string> bars;        ///< bar labels (legend), one bar per group each
  std::vector<std::vector<double>> value;  ///< value[bar][group]; NaN = missing
  std::vector<std::vector<double>> err;    ///< same shape, error-bar half-lengths (may be empty)
  /// Limits the y axis never passes (error bars are cut there); NaN = none.
  double y_floor = std::numeric_limits<double>::quiet_NaN(), y_ceil = std::numeric_limits<double>::quiet_NaN();
};

void draw(const LineChart& chart, const std::filesystem::path& png);
void draw(const BarChart& chart, const std::filesystem::path& png);

/// Round numbers spanning [lo, hi]: about `target` ticks at 1, 2 or 5 x 10^k steps.
std::vector<double> nice_ticks(double lo, double hi, int target = 6);

}  // namespace biaslab::plot
