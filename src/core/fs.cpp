#include "core/fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/errors.h"

namespace biaslab {
namespace fs = std::filesystem;

namespace {

void fsync_path(const fs::path& path, bool directory) {
  int fd = ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0) throw Error("cannot open " + path.string() + " to sync: " + std::strerror(errno));
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void atomic_write_with(const fs::path& path,
                       const std::function<void(const std::string& tmp_path)>& write) {
  fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  fs::create_directories(dir);
  fs::path tmp = dir / ("." + path.filename().string() + ".tmp." + std::to_string(::getpid()));
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

void atomic_write(const fs::path& path, const std::string& content) {
  atomic_write_with(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot write " + tmp + ": " + std::strerror(errno));
    out << content;
    out.close();
    if (!out) throw Error("error writing " + tmp);
  });
}

void write_folder_atomically(const fs::path& path, const std::function<void(const fs::path& tmp)>& fill) {
  const fs::path tmp = path.string() + ".partial";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  try {
    fill(tmp);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
    throw;
  }
  fs::remove_all(path);
  fs::rename(tmp, path);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path.string() + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace biaslab
