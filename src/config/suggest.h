#pragma once
// "Did you mean" suggestions for misspelt keys and choices.
#include <string>
#include <vector>

namespace biaslab {

/// Levenshtein edit distance.
size_t edit_distance(const std::string& a, const std::string& b);

/// The closest candidate within a small edit distance, or "" when none is close.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

/// " (did you mean 'x'?)" or "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

/// "a, b, c"
std::string join(const std::vector<std::string>& items, const std::string& sep = ", ");

}  // namespace biaslab
