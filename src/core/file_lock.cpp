#include "core/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/errors.h"

namespace biaslab {

namespace {

// True when `path` still names the file open as `fd` (the holder before us may have
// removed it between our open and our flock).
bool names_open_file(const std::filesystem::path& path, int fd) {
  struct stat by_path {}, by_fd {};
  return ::stat(path.c_str(), &by_path) == 0 && ::fstat(fd, &by_fd) == 0 && by_path.st_dev == by_fd.st_dev &&
         by_path.st_ino == by_fd.st_ino;
}

}  // namespace

FileLock::FileLock(const std::filesystem::path& path) : path_(path) {
  // A holder removes the file as it releases it; a lock taken on a removed file guards
  // nothing, so open again until the lock is on the file the path names.
  for (int attempt = 0;; ++attempt) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error(path.string() + ": cannot open lock file: " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) break;
    if (names_open_file(path, fd_)) {
      held_ = true;
      const std::string pid = std::to_string(::getpid()) + "\n";
      if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
        // The pid is informational only.
      }
      return;
    }
    ::close(fd_);
    fd_ = -1;
    if (attempt == 100) throw Error(path.string() + ": cannot lock: the file keeps being replaced");
  }
  if (errno != EWOULDBLOCK)
    throw Error(path.string() + ": cannot lock: " + std::strerror(errno));
  char buf[32] = {};
  if (::pread(fd_, buf, sizeof buf - 1, 0) > 0) holder_pid_ = std::strtol(buf, nullptr, 10);
}

FileLock::~FileLock() {
  if (fd_ < 0) return;
  // Remove the file while still holding it, so that no lock file outlives its run; a
  // process that opened it meanwhile sees it gone once it gets the lock, and retries.
  if (held_) ::unlink(path_.c_str());
  ::close(fd_);  // closing releases the flock
}

}  // namespace biaslab
