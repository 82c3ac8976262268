#include "sweep/ledger.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <vector>

#include "core/errors.h"
#include "core/fs.h"

namespace biaslab::sweep {

using json = nlohmann::json;

Ledger::Ledger(std::filesystem::path file) : file_(std::move(file)) {
  if (!std::filesystem::exists(file_)) return;
  try {
    const json j = json::parse(read_file(file_));
    for (const auto& [name, e] : j.at("runs").items()) {
      LedgerEntry entry;
      entry.state = e.at("state").get<std::string>();
      static const std::vector<std::string> kStates = {"pending", "running", "done", "failed", "interrupted"};
      if (std::find(kStates.begin(), kStates.end(), entry.state) == kStates.end())
        throw CheckpointError(file_.string() + ": runs." + name + ".state: unknown state '" + entry.state +
                              "'; expected one of: pending, running, done, failed, interrupted");
      entry.exit_status = e.value("exit_status", 0);
      entry.reason = e.value("reason", "");
      entry.attempts = e.value("attempts", 0);
      entry.started = e.value("started", "");
      entry.finished = e.value("finished", "");
      entry.duration_s = e.value("duration_s", 0.0);
      entry.pid = e.value("pid", 0L);
      entries_[name] = entry;
    }
  } catch (const json::exception& e) {
    throw CheckpointError(file_.string() + ": unreadable sweep ledger (" + e.what() +
                          "); remove it to start the ledger over (finished runs are recognised from their "
                          "run directories; failed runs are tried again)");
  }
}

void Ledger::save() const {
  json runs = json::object();
  for (const auto& [name, e] : entries_) {
    json j = {{"state", e.state}, {"attempts", e.attempts}};
    if (e.attempts) j.update({{"exit_status", e.exit_status}, {"started", e.started}, {"finished", e.finished},
                              {"duration_s", e.duration_s}});
    if (!e.reason.empty()) j["reason"] = e.reason;
    if (e.state == "running") j["pid"] = e.pid;
    runs[name] = j;
  }
  atomic_write(file_, json{{"runs", runs}}.dump(2) + "\n");
}

}  // namespace biaslab::sweep
