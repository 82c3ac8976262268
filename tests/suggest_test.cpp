#include <gtest/gtest.h>

#include "config/suggest.h"

using namespace biaslab;

TEST(Suggest, EditDistance) {
  EXPECT_EQ(edit_distance("depth", "depth"), 0u);
  EXPECT_EQ(edit_distance("dept", "depth"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(Suggest, ClosestMatchOnlyWhenClose) {
  EXPECT_EQ(closest_match("num_head", {"num_heads", "depth", "embed_dim"}), "num_heads");
  EXPECT_EQ(closest_match("zzzzzz", {"num_heads", "depth"}), "");
  EXPECT_EQ(did_you_mean("adamm", {"sgd", "adamw"}), " (did you mean 'adamw'?)");
}
