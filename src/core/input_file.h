#pragma once
// Input files: the rules every command follows for what it reads on a user's behalf
// (docs/reliability.md, "Hostile input"). An input (config, sweep, preset, data file,
// image, checkpoint, archive) must be a regular file, and text inputs have a size bound:
// both are checked before the file is opened, so a FIFO cannot hang a command and
// /dev/zero cannot fill memory. Text that ends up in JSON is checked to be UTF-8.
#include <cstdint>
#include <filesystem>
#include <string>

#include "core/errors.h"

namespace biaslab {

/// Largest config, preset or sweep file read (bytes).
constexpr uint64_t kMaxConfigFileBytes = uint64_t(1) << 20;

/// Why `path` cannot be read as an input file ("does not exist", "is a directory",
/// "is a FIFO (named pipe)", ...), or "" when it is (a link to) a regular file.
std::string input_file_problem(const std::filesystem::path& path);

/// Throws E("PATH: PROBLEM; WHAT must be a regular file") unless `path` is a regular file.
template <typename E = Error>
void require_regular_file(const std::filesystem::path& path, const std::string& what) {
  const std::string problem = input_file_problem(path);
  if (!problem.empty()) throw E(path.string() + ": " + problem + "; " + what + " must be a regular file");
}

/// Reads a whole regular file of at most `max_bytes`; throws Error naming the file,
/// what it is (`what`), its size and the limit otherwise.
std::string read_input_file(const std::filesystem::path& path, uint64_t max_bytes, const std::string& what);

/// "1.5 MiB", "312 bytes": sizes for messages.
std::string format_bytes(uint64_t bytes);

/// Why `text` cannot be written into JSON/YAML as it is ("invalid UTF-8 at byte 3",
/// "a control character (0x09) at byte 1"), or "" when it can.
/// With `controls_ok`, only UTF-8 validity is checked (JSON escapes control characters).
std::string text_problem(const std::string& text, bool controls_ok = false);

}  // namespace biaslab
