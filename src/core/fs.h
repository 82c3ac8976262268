#pragma once
// Atomic file writes: readers see either the old file or the complete new one.
#include <filesystem>
#include <functional>
#include <string>

namespace biaslab {

/// Writes `content` to `path` through a temporary file in the same folder,
/// fsync, rename, and fsync of the folder.
void atomic_write(const std::filesystem::path& path, const std::string& content);

/// Same, for writers that need a file name: `write(tmp_path)` must create tmp_path.
void atomic_write_with(const std::filesystem::path& path,
                       const std::function<void(const std::string& tmp_path)>& write);

/// Builds a folder all or nothing: `fill(tmp)` writes into the sibling folder
/// `path.partial`, which then replaces `path` (removed first if it exists). If `fill`
/// throws, the partial folder is removed and the exception passed on; `path` is untouched.
void write_folder_atomically(const std::filesystem::path& path,
                             const std::function<void(const std::filesystem::path& tmp)>& fill);

/// Reads a whole file; throws biaslab::Error naming the file when it cannot.
std::string read_file(const std::filesystem::path& path);

}  // namespace biaslab
