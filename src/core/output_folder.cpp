#include "core/output_folder.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "core/errors.h"

namespace biaslab {
namespace fs = std::filesystem;

namespace {

// The kind of temporary `name` is (".tmp." for files, ".partial." for folders) when it is
// one, its PID and the name of what was being written.
bool parse_temporary(const std::string& name, std::string* kind, long* pid, std::string* of) {
  if (name.size() < 2 || name[0] != '.') return false;
  for (const std::string marker : {".tmp.", ".partial."}) {
    const auto at = name.rfind(marker);
    if (at == std::string::npos || at == 0) continue;
    const std::string digits = name.substr(at + marker.size());
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    if (kind) *kind = marker;
    if (pid) *pid = std::stol(digits);
    if (of) *of = name.substr(1, at - 1);
    return true;
  }
  return false;
}

}  // namespace

bool is_temporary_name(const std::string& name, long* pid) { return parse_temporary(name, nullptr, pid, nullptr); }

bool holds_only_leftovers(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name != ".lock" && !is_temporary_name(name)) return false;
  }
  return !ec;
}

int remove_stale_temporaries(const fs::path& dir, const std::string& of) {
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string kind, target;
    long pid = 0;
    if (!parse_temporary(e.path().filename().string(), &kind, &pid, &target)) continue;
    if (!of.empty() && target != of) continue;
    // atomic_write leaves files, write_folder_atomically folders; anything else is not ours.
    const bool right_type = kind == ".tmp." ? e.is_regular_file() && !e.is_symlink() : e.is_directory() && !e.is_symlink();
    // Alive (or not ours to signal): leave it; ESRCH: its writer is gone.
    if (right_type && pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) stale.push_back(e.path());
  }
  int removed = 0;
  for (const auto& p : stale) {
    std::error_code ignored;
    if (fs::remove_all(p, ignored) > 0) ++removed;
  }
  return removed;
}

void refuse_foreign_folder(const fs::path& dir, const std::string& option, const std::string& kind,
                           const std::vector<std::string>& strangers) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw CheckpointError(option + ": " + dir.string() + " exists and is not a folder; expected " + kind +
                          " or a new folder");
  std::vector<std::string> names = strangers;
  if (names.empty())
    for (const auto& e : fs::directory_iterator(dir, ec))
      names.push_back(e.path().filename().string() + (e.is_directory() ? "/" : ""));
  std::sort(names.begin(), names.end());
  std::string list;
  for (size_t i = 0; i < names.size() && i < 6; ++i) list += (i ? ", " : "") + names[i];
  if (names.size() > 6) list += ", ... (" + std::to_string(names.size()) + " in all)";
  throw CheckpointError(option + ": " + dir.string() + " is not empty and is not " + kind + " (it holds " +
                        (strangers.empty() ? "" : "files biaslab did not write: ") + list +
                        "); biaslab writes only into a new or empty folder or one it wrote itself, and never "
                        "deletes what it did not write: choose another folder");
}

}  // namespace biaslab
