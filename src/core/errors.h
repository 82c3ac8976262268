#pragma once
// Error types and the process exit status each one maps to (see docs/commands.md,
// "Exit status").
#include <stdexcept>
#include <string>

namespace biaslab {

/// Base of every error biaslab reports to the user by message alone.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  virtual int exit_code() const { return 1; }
};

/// A bad configuration value, key, file or command-line override. Raised before
/// any model or data is allocated.
class ConfigError : public Error {
 public:
  using Error::Error;
  int exit_code() const override { return 2; }
};

/// A missing, truncated or malformed data file.
class DataError : public Error {
 public:
  using Error::Error;
  int exit_code() const override { return 3; }
};

/// A missing, corrupt or incompatible checkpoint or run directory.
class CheckpointError : public Error {
 public:
  using Error::Error;
  int exit_code() const override { return 5; }
};

/// A NaN or Inf in the loss or gradients that the configured policy does not absorb.
class NonFiniteError : public Error {
 public:
  using Error::Error;
  int exit_code() const override { return 4; }
};

/// A sweep finished with runs that failed (their reasons are in its ledger).
class SweepFailed : public Error {
 public:
  using Error::Error;
  int exit_code() const override { return 6; }
};

/// Distributed training lost a rank: a collective failed or timed out (another rank
/// died or hangs), or the launcher's environment is unusable at run time.
/// A rank that stops because another one failed first takes over that one's status.
class DistError : public Error {
 public:
  explicit DistError(const std::string& what, int code = 7) : Error(what), code_(code) {}
  int exit_code() const override { return code_; }

 private:
  int code_;
};

/// Leave with `code`, the cause already reported (e.g. by a rank of `train --nproc`).
class ExitWith : public Error {
 public:
  explicit ExitWith(int code) : Error(""), code_(code) {}
  int exit_code() const override { return code_; }

 private:
  int code_;
};

/// Training stopped by SIGINT/SIGTERM after writing its checkpoint; rerunning the
/// same command resumes it.
class Interrupted : public Error {
 public:
  using Error::Error;
  int exit_code() const override { return 75; }
};

}  // namespace biaslab
