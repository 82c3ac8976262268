#pragma once
// Atomic file writes: readers see either the old file or the complete new one.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace biaslab {

/// Writes `content` to `path` through a temporary file in the same folder,
/// fsync, rename, and fsync of the folder.
void atomic_write(const std::filesystem::path& path, const std::string& content);

/// Same, for writers that need a file name: `write(tmp_path)` must create tmp_path.
void atomic_write_with(const std::filesystem::path& path,
                       const std::function<void(const std::string& tmp_path)>& write);

/// Makes `to` a copy of `from` without `from` ever disappearing: a hard link (or, where
/// the file system has none, a copy) under a temporary name in `to`'s folder, renamed
/// onto `to`. Readers see the old `to` or the complete copy.
void atomic_copy(const std::filesystem::path& from, const std::filesystem::path& to);

/// Builds a folder all or nothing: `fill(tmp)` writes into the hidden sibling folder
/// `.NAME.partial.PID`, which gets a manifest of its files (kFolderManifest) and then
/// replaces `path`. If `fill` throws, the partial folder is removed and the exception
/// passed on; `path` is untouched. An existing `path` is replaced only when
/// require_replaceable_folder allows it.
void write_folder_atomically(const std::filesystem::path& path,
                             const std::function<void(const std::filesystem::path& tmp)>& fill,
                             const std::string& option, const std::string& kind,
                             const std::function<bool(const std::filesystem::path&)>& legacy = nullptr);

/// The manifest write_folder_atomically leaves in a folder: one relative path a line.
inline constexpr const char* kFolderManifest = ".biaslab-files";

/// Throws CheckpointError (exit 5) unless `path` does not exist, is empty, or holds only
/// files listed in its own manifest (a folder write_folder_atomically wrote and nobody
/// added to): what biaslab did not write is never deleted. `option` and `kind` name the
/// command-line option and the expected folder for the message. `legacy` may accept a
/// folder without a manifest (written by a version before manifests) after checking
/// every file in it is one that command writes. "." and ".." are ConfigErrors.
void require_replaceable_folder(const std::filesystem::path& path, const std::string& option,
                                const std::string& kind,
                                const std::function<bool(const std::filesystem::path&)>& legacy = nullptr);

/// Every file under `dir` (not folders), as paths relative to it, sorted.
std::vector<std::string> files_under(const std::filesystem::path& dir);

/// Reads a whole file; throws biaslab::Error naming the file when it cannot.
std::string read_file(const std::filesystem::path& path);

}  // namespace biaslab
