// biaslab: train and compare ViTs, ResNets and hybrids. Exit status: 0 ok, 1 unexpected
// error, 2 bad config or command line, 3 bad data, 4 non-finite training, 5 bad checkpoint
// or run directory, 6 a sweep with failed runs, 7 a distributed rank failed, 75 interrupted (rerun to resume).
#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "cli/commands.h"
#include "core/build_info.h"
#include "core/errors.h"
#include "core/fault.h"
#include "core/input_file.h"
#include "core/logging.h"
#include "core/runtime.h"

namespace biaslab::cli {
namespace {
std::string g_command_line;
std::vector<std::string> g_arguments;
}  // namespace
const std::string& command_line() { return g_command_line; }
const std::vector<std::string>& arguments() { return g_arguments; }
void set_command_line(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    g_command_line += (i ? " " : "") + std::string(argv[i]);
    g_arguments.emplace_back(argv[i]);
  }
}
}  // namespace biaslab::cli

int main(int argc, char** argv) {
  using namespace biaslab;
  tune_allocator();
  // BIASLAB_LOG_LEVEL=debug|trace|info|warn|error (info by default).
  const char* level = std::getenv("BIASLAB_LOG_LEVEL");
  const std::string wanted = level && *level ? level : "info";
  const bool known = spdlog::level::from_str(wanted) != spdlog::level::off || wanted == "off";
  setup_logging(known ? wanted : "info");
  if (!known)
    spdlog::warn("BIASLAB_LOG_LEVEL='{}' is not one of trace, debug, info, warn, error, critical, off; using info",
                 wanted);
  cli::set_command_line(argc, argv);
  CLI::App app{"biaslab: ViTs, ResNets and hybrid CNN-Transformers under one trainer"};
  app.set_version_flag("--version", std::string(build::kVersion) + " (" + build::kGitCommit +
                                        (build::kGitDirty ? ", dirty" : "") + ")");
  app.require_subcommand(1);
  cli::register_train(app);
  cli::register_eval(app);
  cli::register_models(app);
  cli::register_summary(app);
  cli::register_data(app);
  cli::register_sweep(app);
  cli::register_report(app);
  cli::register_compare(app);
  cli::register_export(app);
  cli::register_convert(app);
  cli::register_runs(app);
  cli::register_predict(app);
  cli::register_analyze(app);
  cli::register_bench(app);
  try {
    fault::check_environment();
    for (int i = 1; i < argc; ++i)
      if (const std::string problem = text_problem(argv[i], /*controls_ok=*/true); !problem.empty())
        throw ConfigError("command-line argument " + std::to_string(i) + " holds " + problem +
                          "; biaslab records its command line in JSON and takes UTF-8 text only");
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const Error& e) {
    if (*e.what()) spdlog::error("{}", e.what());
    return e.exit_code();
  } catch (const c10::Error& e) {
    spdlog::error("{}", e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return 0;
}
