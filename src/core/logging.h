#pragma once
// Logging: spdlog to stderr, and additionally to a file (the run's train.log).
#include <string>

namespace biaslab {

/// Console logging at `level` (trace, debug, info, warn, error).
void setup_logging(const std::string& level = "info");

/// Adds (or replaces) a file sink so everything logged from now on also goes to `path`.
void log_to_file(const std::string& path);

/// Removes the file sink added by log_to_file (flushing it).
void stop_log_file();

/// Ranks other than 0 of a distributed run log warnings and errors only (everything at
/// a debug or trace level), prefixed with "[rank N]"; rank 0 logs as a single process does.
void set_log_rank(int rank);

/// True when stderr is a terminal (progress bars instead of periodic log lines).
bool stderr_is_terminal();

}  // namespace biaslab
