#pragma once
// An advisory lock on a file (flock): one process at a time in a run or sweep
// directory. The kernel releases it when the holder exits, however it exits, so a
// lock left by a killed process never blocks the next one. The holder removes the file
// when it releases the lock normally; a killed holder leaves it, harmless.
#include <filesystem>

namespace biaslab {

class FileLock {
 public:
  /// Tries to lock `path` (created if missing) without waiting; see held().
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();  ///< removes the file (when held) and releases the lock
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  /// True when this process now holds the lock.
  bool held() const { return held_; }
  /// When not held: the process id the holder wrote into the file (0 if unknown).
  long holder_pid() const { return holder_pid_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  bool held_ = false;
  long holder_pid_ = 0;
};

}  // namespace biaslab
