#include "core/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/errors.h"

namespace biaslab {

FileLock::FileLock(const std::filesystem::path& path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(path.string() + ": cannot open lock file: " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) {
    held_ = true;
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
      // The pid is informational only.
    }
    return;
  }
  if (errno != EWOULDBLOCK)
    throw Error(path.string() + ": cannot lock: " + std::strerror(errno));
  char buf[32] = {};
  if (::pread(fd_, buf, sizeof buf - 1, 0) > 0) holder_pid_ = std::strtol(buf, nullptr, 10);
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace biaslab
