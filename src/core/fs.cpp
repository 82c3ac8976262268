#include "core/fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <vector>
#include <sstream>

#include "core/errors.h"
#include "core/input_file.h"
#include "core/output_folder.h"

namespace biaslab {
namespace fs = std::filesystem;

namespace {

void fsync_path(const fs::path& path, bool directory) {
  int fd = ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0) throw Error("cannot open " + path.string() + " to sync: " + std::strerror(errno));
  ::fsync(fd);
  ::close(fd);
}

// ".NAME.TAG.PID": the hidden temporary that becomes `path` (built by appending: GCC 12
// warns falsely about `"." + std::string&&` at -O2).
std::string temporary_name(const fs::path& path, const char* tag) {
  std::string name = ".";
  name += path.filename().string();
  name += '.';
  name += tag;
  name += '.';
  name += std::to_string(::getpid());
  return name;
}

}  // namespace

void atomic_write_with(const fs::path& path,
                       const std::function<void(const std::string& tmp_path)>& write) {
  fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  fs::create_directories(dir);
  fs::path tmp = dir / temporary_name(path, "tmp");
  try {
    write(tmp.string());
    fsync_path(tmp, false);
    fs::rename(tmp, path);
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
  fsync_path(dir, true);
}

void atomic_copy(const fs::path& from, const fs::path& to) {
  atomic_write_with(to, [&](const std::string& tmp) {
    std::error_code ec;
    fs::create_hard_link(from, tmp, ec);
    if (ec) fs::copy_file(from, tmp, fs::copy_options::overwrite_existing);
  });
}

void atomic_write(const fs::path& path, const std::string& content) {
  atomic_write_with(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot write " + tmp + ": " + std::strerror(errno));
    out << content;
    out.close();
    if (!out) throw Error("error writing " + tmp);
  });
}

std::vector<std::string> files_under(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (!e.is_directory()) out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// `path` without a trailing separator ("out/" -> "out"); "." and ".." name no folder of
// their own to replace.
fs::path replaceable_path(const fs::path& path, const std::string& option) {
  fs::path p = path.lexically_normal();
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();
  if (p.empty() || p.filename() == "." || p.filename() == ".." || p == p.root_path())
    throw ConfigError(option + ": '" + path.string() + "' names no folder of its own; give a folder name");
  return p;
}

}  // namespace

void require_replaceable_folder(const fs::path& given, const std::string& option, const std::string& kind,
                                const std::function<bool(const fs::path&)>& legacy) {
  const fs::path path = replaceable_path(given, option);
  std::vector<std::string> strangers;  // files a manifest does not list
  const FolderState state = folder_state(path, [&](const fs::path& dir) {
    const fs::path manifest = dir / kFolderManifest;
    if (!fs::is_regular_file(manifest)) return legacy && legacy(dir);
    std::set<std::string> listed;
    std::istringstream in(read_file(manifest));
    for (std::string line; std::getline(in, line);) listed.insert(line);
    for (const auto& f : files_under(dir))
      if (f != kFolderManifest && !listed.count(f)) strangers.push_back(f);
    return strangers.empty();
  });
  if (state == FolderState::foreign) refuse_foreign_folder(path, option, kind, strangers);
}

void write_folder_atomically(const fs::path& given, const std::function<void(const fs::path& tmp)>& fill,
                             const std::string& option, const std::string& kind,
                             const std::function<bool(const fs::path&)>& legacy) {
  const fs::path path = replaceable_path(given, option);
  require_replaceable_folder(path, option, kind, legacy);
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  fs::create_directories(parent);
  remove_stale_temporaries(parent, path.filename().string());
  const fs::path tmp = parent / temporary_name(path, "partial");
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  try {
    fill(tmp);
    std::string manifest;
    for (const auto& f : files_under(tmp)) manifest += f + "\n";
    atomic_write(tmp / kFolderManifest, manifest);
    // Checked again just before the swap: nothing may have been added meanwhile.
    require_replaceable_folder(path, option, kind, legacy);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    throw;
  }
  fs::remove_all(path);
  fs::rename(tmp, path);
}

std::string read_file(const fs::path& path) {
  require_regular_file(path, "the file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path.string() + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace biaslab
