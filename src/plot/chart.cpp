#include "plot/chart.h"

#include "core/opencv_support.h"
#if BIASLAB_WITH_OPENCV
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/errors.h"
#include "core/fs.h"

namespace biaslab::plot {
#if BIASLAB_WITH_OPENCV
namespace {

constexpr int kWidth = 1000, kHeight = 640;
constexpr int kLeft = 90, kTop = 60, kBottom = 80;  // plot-area margins; the right one holds the legend
constexpr int kMinRight = 160, kMaxRight = 420;
const cv::Scalar kBlack(0, 0, 0), kGrid(225, 225, 225), kAxis(60, 60, 60);
constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;

cv::Scalar colour(size_t i) {
  static const cv::Scalar kTab10[] = {{180, 119, 31}, {14, 127, 255}, {44, 160, 44},  {40, 39, 214},  {189, 103, 148},
                                      {75, 86, 140},  {194, 119, 227}, {127, 127, 127}, {34, 189, 188}, {207, 190, 23}};
  return kTab10[i % 10];
}

void text(cv::Mat& img, const std::string& s, cv::Point at, double scale, int align = 0, const cv::Scalar& c = kBlack,
          int thickness = 1) {
  int base = 0;
  const cv::Size size = cv::getTextSize(s, kFont, scale, thickness, &base);
  if (align == 1) at.x -= size.width / 2;   // centre
  if (align == 2) at.x -= size.width;       // right
  cv::putText(img, s, at, kFont, scale, c, thickness, cv::LINE_AA);
}

void vertical_text(cv::Mat& img, const std::string& s, cv::Point centre, double scale) {
  int base = 0;
  const cv::Size size = cv::getTextSize(s, kFont, scale, 1, &base);
  cv::Mat strip(size.height + base + 4, size.width + 4, CV_8UC3, cv::Scalar(255, 255, 255));
  cv::putText(strip, s, {2, size.height + 2}, kFont, scale, kBlack, 1, cv::LINE_AA);
  cv::Mat rotated;
  cv::rotate(strip, rotated, cv::ROTATE_90_COUNTERCLOCKWISE);
  const int x = std::max(0, centre.x - rotated.cols / 2), y = std::max(0, centre.y - rotated.rows / 2);
  if (x + rotated.cols <= img.cols && y + rotated.rows <= img.rows) rotated.copyTo(img(cv::Rect(x, y, rotated.cols, rotated.rows)));
}

// Series 0-9 get circles, 10-19 squares, then diamonds: colours repeat after ten.
void marker(cv::Mat& img, cv::Point p, size_t series, const cv::Scalar& fill = cv::Scalar(-1, 0, 0)) {
  const cv::Scalar c = fill[0] < 0 ? colour(series) : fill;
  if (series < 10) {
    cv::circle(img, p, 4, c, cv::FILLED, cv::LINE_AA);
  } else if (series < 20) {
    cv::rectangle(img, {p.x - 4, p.y - 4}, {p.x + 4, p.y + 4}, c, cv::FILLED);
  } else {
    const std::vector<cv::Point> diamond = {{p.x, p.y - 5}, {p.x + 5, p.y}, {p.x, p.y + 5}, {p.x - 5, p.y}};
    cv::fillConvexPoly(img, diamond, c, cv::LINE_AA);
  }
}

std::string tick_label(double v) {
  if (v == 0) return "0";
  const double a = std::abs(v);
  if (a >= 1e5 || a < 1e-3) return fmt::format("{:.0e}", v);
  std::string s = fmt::format("{:.4f}", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

// Shortens a label to fit `max_px` at `scale`.
std::string fit(const std::string& s, double scale, int max_px) {
  int base = 0;
  std::string out = s;
  while (out.size() > 4 && cv::getTextSize(out, kFont, scale, 1, &base).width > max_px) out = out.substr(0, out.size() - 4) + "...";
  return out;
}

struct Frame {
  cv::Mat img{kHeight, kWidth, CV_8UC3, cv::Scalar(255, 255, 255)};
  cv::Rect area;
  int right = kMinRight;

  // The legend's labels decide the right margin (within limits; longer ones are shortened).
  explicit Frame(const std::vector<std::string>& labels) {
    int base = 0;
    for (const auto& l : labels) right = std::max(right, cv::getTextSize(l, kFont, 0.45, 1, &base).width + 60);
    right = std::min(right, kMaxRight);
    area = cv::Rect(kLeft, kTop, kWidth - kLeft - right, kHeight - kTop - kBottom);
  }
  double y_lo = 0, y_hi = 1;
  // Pixel row of y, clipped to the plot area (error bars end at the axis limits).
  int py(double y) const {
    const double t = std::clamp((y - y_lo) / (y_hi - y_lo), 0.0, 1.0);
    return int(std::lround(area.y + area.height * (1.0 - t)));
  }

  void frame(const std::string& title, const std::string& x_label, const std::string& y_label) {
    // The title is centred on the image and shrunk until it fits.
    double scale = 0.75;
    int base = 0;
    while (scale > 0.4 && cv::getTextSize(title, kFont, scale, 2, &base).width > kWidth - 30) scale -= 0.05;
    text(img, title, {kWidth / 2, 36}, scale, 1, kBlack, 2);
    text(img, x_label, {area.x + area.width / 2, kHeight - 22}, 0.6, 1);
    vertical_text(img, y_label, {24, area.y + area.height / 2}, 0.6);
  }
  void y_axis(double lo, double hi, double floor_limit, double ceil_limit) {
    if (std::isfinite(floor_limit)) lo = std::max(lo, floor_limit);
    if (std::isfinite(ceil_limit)) hi = std::min(hi, ceil_limit);
    auto ticks = nice_ticks(lo, hi);
    y_lo = std::min(lo, ticks.front());
    y_hi = std::max(hi, ticks.back());
    if (std::isfinite(floor_limit)) y_lo = std::max(y_lo, floor_limit);
    if (std::isfinite(ceil_limit)) y_hi = std::min(y_hi, ceil_limit);
    ticks.erase(std::remove_if(ticks.begin(), ticks.end(), [&](double t) { return t < y_lo - 1e-9 || t > y_hi + 1e-9; }),
                ticks.end());
    for (double t : ticks) {
      cv::line(img, {area.x, py(t)}, {area.x + area.width, py(t)}, kGrid, 1);
      text(img, tick_label(t), {area.x - 8, py(t) + 5}, 0.45, 2);
    }
  }
  void border() { cv::rectangle(img, area, kAxis, 1); }
  void legend(const std::vector<std::string>& labels, bool markers) {
    int y = area.y + 10;
    for (size_t i = 0; i < labels.size(); ++i, y += 24) {
      const int x = area.x + area.width + 18;
      cv::rectangle(img, {x, y - 10}, {x + 22, y + 2}, colour(i), cv::FILLED);
      if (markers && i >= 10) marker(img, {x + 11, y - 4}, i, cv::Scalar(255, 255, 255));
      text(img, fit(labels[i], 0.45, right - 50), {x + 30, y + 1}, 0.45);
    }
  }
  void save(const std::filesystem::path& png) {
    std::vector<uchar> bytes;
    if (!cv::imencode(".png", img, bytes, {cv::IMWRITE_PNG_COMPRESSION, 6}))
      throw Error(png.string() + ": OpenCV could not encode the PNG");
    atomic_write(png, std::string(bytes.begin(), bytes.end()));
  }
};

}  // namespace
#endif

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / std::max(1, target - 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::floor(lo / step) * step; t <= hi + step * 0.5; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
    if (t >= hi) break;
  }
  return ticks;
}

#if BIASLAB_WITH_OPENCV
void draw(const LineChart& chart, const std::filesystem::path& png) {
  std::vector<std::string> labels;
  for (const auto& l : chart.lines) labels.push_back(l.label);
  Frame f(labels);
  f.frame(chart.title, chart.x_label, chart.y_label);
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  for (const auto& l : chart.lines)
    for (size_t i = 0; i < l.x.size(); ++i) {
      if (!std::isfinite(l.y[i])) continue;
      if (chart.log_x && l.x[i] <= 0) throw Error("plot '" + chart.title + "': log x axis needs positive x values");
      x_lo = std::min(x_lo, l.x[i]);
      x_hi = std::max(x_hi, l.x[i]);
      const double e = l.err.empty() ? 0.0 : l.err[i];
      y_lo = std::min(y_lo, l.y[i] - e);
      y_hi = std::max(y_hi, l.y[i] + e);
    }
  if (!std::isfinite(x_lo)) {
    x_lo = 0;
    x_hi = 1;
    y_lo = 0;
    y_hi = 1;
  }
  auto tx = [&](double x) { return chart.log_x ? std::log10(x) : x; };
  double a = tx(x_lo), b = tx(x_hi);
  if (b <= a) {
    a -= 0.5;
    b += 0.5;
  }
  const double pad = 0.04 * (b - a);
  a -= pad;
  b += pad;
  auto px = [&](double x) { return int(std::lround(f.area.x + f.area.width * (tx(x) - a) / (b - a))); };
  if (y_hi - y_lo < 1e-9 * std::max(1.0, std::abs(y_hi))) {  // all points equal: show a band around them
    const double pad = std::max(0.5, 0.05 * std::abs(y_hi));
    y_lo -= pad;
    y_hi += pad;
  }
  const double y_pad = 0.05 * (y_hi - y_lo);
  f.y_axis(y_lo - y_pad, y_hi + y_pad, chart.y_floor, chart.y_ceil);
  std::vector<double> xt = chart.x_ticks;
  if (xt.empty()) {
    if (chart.log_x) {
      for (double d = std::floor(a); d <= std::ceil(b); ++d)
        if (d >= a && d <= b) xt.push_back(std::pow(10.0, d));
    } else {
      xt = nice_ticks(x_lo, x_hi);
    }
  }
  for (double t : xt) {
    if (tx(t) < a || tx(t) > b) continue;
    cv::line(f.img, {px(t), f.area.y}, {px(t), f.area.y + f.area.height}, kGrid, 1);
    text(f.img, tick_label(t), {px(t), f.area.y + f.area.height + 22}, 0.45, 1);
  }
  f.border();
  bool has_err = false;
  for (const auto& l : chart.lines)
    for (double e : l.err) has_err = has_err || e > 0;
  for (size_t s = 0; s < chart.lines.size(); ++s) {
    const auto& l = chart.lines[s];
    std::vector<cv::Point> pts;
    // With error bars, lines side by side a few pixels apart so the bars stay readable.
    const int dodge = has_err ? int(std::lround((double(s) - double(chart.lines.size() - 1) / 2.0) * 5.0)) : 0;
    for (size_t i = 0; i < l.x.size(); ++i) {
      if (!std::isfinite(l.y[i])) continue;
      const cv::Point p{px(l.x[i]) + dodge, f.py(l.y[i])};
      pts.push_back(p);
      if (!l.err.empty() && l.err[i] > 0) {
        const int top = f.py(l.y[i] + l.err[i]), bottom = f.py(l.y[i] - l.err[i]);
        cv::line(f.img, {p.x, top}, {p.x, bottom}, colour(s), 1, cv::LINE_AA);
        cv::line(f.img, {p.x - 5, top}, {p.x + 5, top}, colour(s), 1, cv::LINE_AA);
        cv::line(f.img, {p.x - 5, bottom}, {p.x + 5, bottom}, colour(s), 1, cv::LINE_AA);
      }
    }
    if (pts.size() > 1) cv::polylines(f.img, pts, false, colour(s), 2, cv::LINE_AA);
    for (const auto& p : pts) marker(f.img, p, s);
  }
  f.legend(labels, true);
  f.save(png);
}

void draw(const BarChart& chart, const std::filesystem::path& png) {
  Frame f(chart.bars);
  f.frame(chart.title, "", chart.y_label);
  double hi = 0.0, lo = 0.0;
  for (size_t b = 0; b < chart.value.size(); ++b)
    for (size_t g = 0; g < chart.value[b].size(); ++g) {
      const double v = chart.value[b][g];
      if (!std::isfinite(v)) continue;
      const double e = chart.err.empty() ? 0.0 : chart.err[b][g];
      hi = std::max(hi, v + e);
      lo = std::min(lo, v - e);
    }
  f.y_axis(lo, hi * 1.05, chart.y_floor, chart.y_ceil);
  const int groups = int(chart.groups.size()), bars = int(chart.bars.size());
  const double slot = double(f.area.width) / std::max(1, groups);
  const double bar_w = slot * 0.8 / std::max(1, bars);
  for (int g = 0; g < groups; ++g) {
    const double left = f.area.x + slot * g + slot * 0.1;
    text(f.img, fit(chart.groups[g], 0.45, int(slot) - 6), {int(f.area.x + slot * (g + 0.5)), f.area.y + f.area.height + 22},
         0.45, 1);
    for (int b = 0; b < bars; ++b) {
      const double v = chart.value[b][g];
      if (!std::isfinite(v)) continue;
      const int x0 = int(left + bar_w * b), x1 = int(left + bar_w * (b + 1)) - 2;
      cv::rectangle(f.img, {x0, f.py(v)}, {x1, f.py(0)}, colour(b), cv::FILLED);
      const double e = chart.err.empty() ? 0.0 : chart.err[b][g];
      if (e > 0) {
        const int xc = (x0 + x1) / 2;
        cv::line(f.img, {xc, f.py(v + e)}, {xc, f.py(v - e)}, kBlack, 1, cv::LINE_AA);
        cv::line(f.img, {xc - 4, f.py(v + e)}, {xc + 4, f.py(v + e)}, kBlack, 1, cv::LINE_AA);
        cv::line(f.img, {xc - 4, f.py(v - e)}, {xc + 4, f.py(v - e)}, kBlack, 1, cv::LINE_AA);
      }
      if (bar_w >= 34) text(f.img, fmt::format("{:.1f}", v), {(x0 + x1) / 2, f.py(v + e) - 6}, 0.38, 1);
    }
  }
  f.border();
  f.legend(chart.bars, false);
  f.save(png);
}

#else
void draw(const LineChart& chart, const std::filesystem::path& png) {
  refuse_without_opencv("drawing " + png.string());
}
void draw(const BarChart& chart, const std::filesystem::path& png) {
  refuse_without_opencv("drawing " + png.string());
}
#endif
}  // namespace biaslab::plot
