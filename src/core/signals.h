#pragma once
// Graceful stop on SIGINT / SIGTERM: the first signal asks the trainer to finish the
// current step, write a checkpoint and exit with kExitInterrupted; a second one ends
// the process at once (default action), unless it comes within 2 s of the first (the
// same Ctrl-C delivered twice: by the terminal and by a launcher forwarding it).
namespace biaslab {

/// Exit status of a run stopped by a signal after writing its checkpoint (sysexits'
/// EX_TEMPFAIL: rerunning the same command resumes it).
constexpr int kExitInterrupted = 75;  // = Interrupted::exit_code()

void install_stop_handlers();
/// The signal received (SIGINT or SIGTERM), or 0.
int stop_signal();
/// For tests: forget a received signal.
void reset_stop_signal();

}  // namespace biaslab
