#include "core/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

namespace biaslab {
namespace {
std::shared_ptr<spdlog::sinks::sink> g_file_sink;
}

void setup_logging(const std::string& level) {
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("biaslab", console);
  logger->set_pattern("[%Y-%m-%d %H:%M:%S] [%^%l%$] %v");
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

void log_to_file(const std::string& path) {
  stop_log_file();
  g_file_sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false);
  g_file_sink->set_pattern("[%Y-%m-%d %H:%M:%S] [%l] %v");
  spdlog::default_logger()->sinks().push_back(g_file_sink);
}

void stop_log_file() {
  if (!g_file_sink) return;
  auto& sinks = spdlog::default_logger()->sinks();
  g_file_sink->flush();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), g_file_sink), sinks.end());
  g_file_sink.reset();
}

void set_log_rank(int rank) {
  if (rank <= 0) return;
  auto logger = spdlog::default_logger();
  logger->set_pattern("[%Y-%m-%d %H:%M:%S] [%^%l%$] [rank " + std::to_string(rank) + "] %v");
  if (logger->level() == spdlog::level::info) logger->set_level(spdlog::level::warn);
}

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

}  // namespace biaslab
