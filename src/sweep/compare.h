#pragma once
// `biaslab compare REFERENCE_DIR DIR...`: paired differences between the runs of
// different sweep directories, where `report` pairs only within one sweep (e.g. the
// ResNet-20 recipe's final runs against the transformer recipes', each its own sweep).
//
// Runs are paired when they have the same seed values (the sweeps must share their seed
// axes) and the same values of the non-seed axes every sweep has (the context, e.g.
// data.train_fraction); a sweep's other axes tell its arms apart (e.g. family=cct_lite;
// a sweep without any is one arm, named after the sweep). Each difference is a run of a
// compared sweep minus the reference sweep's run it is paired with. Paired runs must
// have been tested on the same data (summary.json's data.preset and test_size), else
// the comparison is refused. Runs that are not complete, or that ran another config
// than planned (report's drift check), are left out and listed.
//
//   compare.md   the arms' statistics and the paired differences, with the command that
//                reproduces it from the output folder
//   arms.csv     per context and arm: n, mean, sample sd, 95% t-interval
//   pairs.csv    per context, reference arm and compared arm: the paired differences'
//                n, mean, sd and 95% t-interval
#include <filesystem>
#include <string>
#include <vector>

namespace biaslab::sweep {

struct Comparison {
  std::string markdown;   ///< compare.md
  std::string arms_csv;   ///< arms.csv
  std::string pairs_csv;  ///< pairs.csv
};

/// Compares the sweep directories `dirs` (the first is the reference) on `metric`
/// (final.<accuracy> or best.<accuracy>; "" = the reference sweep's report.metric).
/// `out_dir` ("" = none) only changes the reproduce line: its paths are written relative
/// to it. ConfigError when the sweeps cannot be paired (no common seed axis, another
/// test set, fewer than two directories, a directory given twice); CheckpointError for
/// an unreadable sweep directory.
Comparison compare_sweeps(const std::vector<std::filesystem::path>& dirs, const std::string& metric,
                          const std::filesystem::path& out_dir);

/// Writes compare.md, arms.csv and pairs.csv into `out_dir`: a new or empty folder, or
/// an earlier comparison (rewritten in place); anything else is refused before writing.
std::vector<std::filesystem::path> write_comparison(const Comparison& c, const std::filesystem::path& out_dir);

}  // namespace biaslab::sweep
