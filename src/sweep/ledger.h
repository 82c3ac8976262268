#pragma once
// The sweep's record of each run (ledger.json in the sweep directory): pending,
// running, done, failed (with exit status and reason) or interrupted. Written
// atomically by the one sweep process holding the directory's lock after every change.
#include <filesystem>
#include <map>
#include <string>

namespace biaslab::sweep {

struct LedgerEntry {
  std::string state = "pending";  ///< pending | running | done | failed | interrupted
  int exit_status = 0;            ///< of the last attempt (128 + N when killed by signal N)
  std::string reason;             ///< why the last attempt failed or stopped
  int attempts = 0;
  std::string started, finished;  ///< ISO 8601, last attempt
  double duration_s = 0.0;        ///< of the last attempt
  long pid = 0;                   ///< while running
};

class Ledger {
 public:
  /// Reads `file` when it exists (a corrupt ledger is a CheckpointError naming it).
  explicit Ledger(std::filesystem::path file);
  LedgerEntry& operator[](const std::string& run) { return entries_[run]; }
  const std::map<std::string, LedgerEntry>& entries() const { return entries_; }
  void save() const;

 private:
  std::filesystem::path file_;
  std::map<std::string, LedgerEntry> entries_;
};

}  // namespace biaslab::sweep
