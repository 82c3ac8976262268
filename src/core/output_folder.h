#pragma once
// Output folders: the rule every command follows for where it writes on a user's behalf
// (docs/reliability.md, "Hostile input"). An output folder (--out of train, sweep,
// report, analyze, data export) is used only when it does not exist, is empty, or holds
// what biaslab itself wrote there; anything else is refused (CheckpointError, exit 5)
// and left untouched. Temporary files of dead biaslab processes are recognised by name
// and PID.
#include <filesystem>
#include <string>
#include <vector>

namespace biaslab {

/// What biaslab's writer of a folder recognises as its own output there.
enum class FolderState { absent, empty, ours, foreign };

/// The state of `dir` for a writer whose own folders satisfy `ours(dir)`. Entries that
/// only a biaslab process leaves (its `.lock`, temporary files `.NAME.tmp.PID`) do not
/// make a folder foreign. Something that is not a folder at all is foreign.
template <typename Ours>
FolderState folder_state(const std::filesystem::path& dir, Ours&& ours);

/// Refuses (CheckpointError, exit 5) an output folder in state `foreign`, naming the
/// folder, what it holds (or, when known, `strangers`: the files in it biaslab did not
/// write) and what was expected (`kind`, e.g. "a biaslab run directory").
[[noreturn]] void refuse_foreign_folder(const std::filesystem::path& dir, const std::string& option,
                                        const std::string& kind, const std::vector<std::string>& strangers = {});

/// True when `dir` holds nothing but biaslab's lock and temporary files.
bool holds_only_leftovers(const std::filesystem::path& dir);

/// True for the names of biaslab's temporary files and folders: `.NAME.tmp.PID`
/// (atomic_write) and `.NAME.partial.PID` (write_folder_atomically); `pid` gets the PID.
bool is_temporary_name(const std::string& name, long* pid = nullptr);

/// Removes the temporary files and folders in `dir` (not recursively) that a biaslab
/// process which is no longer alive left behind; returns how many. With `of` set, only
/// those of writes of `dir/of` (for folders biaslab does not own: `.OF.tmp.PID`, ...).
int remove_stale_temporaries(const std::filesystem::path& dir, const std::string& of = "");

template <typename Ours>
FolderState folder_state(const std::filesystem::path& dir, Ours&& ours) {
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(dir, ec);
  if (ec || status.type() == std::filesystem::file_type::not_found) return FolderState::absent;
  if (!std::filesystem::is_directory(dir, ec)) return FolderState::foreign;
  if (holds_only_leftovers(dir)) return FolderState::empty;
  return ours(dir) ? FolderState::ours : FolderState::foreign;
}

/// Convenience: folder_state + refuse_foreign_folder; returns the state otherwise.
template <typename Ours>
FolderState claim_output_folder(const std::filesystem::path& dir, const std::string& option, const std::string& kind,
                                Ours&& ours) {
  const FolderState state = folder_state(dir, ours);
  if (state == FolderState::foreign) refuse_foreign_folder(dir, option, kind);
  return state;
}

}  // namespace biaslab
