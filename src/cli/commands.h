#pragma once
// One register_<command> per subcommand file; main.cpp wires them.
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace biaslab {
struct ExportReport;
struct ExportRequest;
}

namespace biaslab::cli {

void register_train(CLI::App& app);
void register_eval(CLI::App& app);
void register_models(CLI::App& app);
void register_summary(CLI::App& app);
void register_data(CLI::App& app);
void register_sweep(CLI::App& app);
void register_report(CLI::App& app);
void register_compare(CLI::App& app);
void register_export(CLI::App& app);
void register_convert(CLI::App& app);
void register_runs(CLI::App& app);
void register_predict(CLI::App& app);
void register_analyze(CLI::App& app);
void register_bench(CLI::App& app);

/// export's and convert's --format and --names options, into `req`.
void add_export_format_options(CLI::App& cmd, ExportRequest& req);
/// What export and convert print about the file they wrote (as JSON with `json`).
void print_export_report(const ExportReport& r, const ExportRequest& req, bool json);

/// The command line as typed, for meta.json.
const std::string& command_line();
/// argv as given (argv[0] first).
const std::vector<std::string>& arguments();
void set_command_line(int argc, char** argv);

}  // namespace biaslab::cli
