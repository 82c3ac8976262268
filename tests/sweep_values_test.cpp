#include <gtest/gtest.h>

#include "sweep/values.h"

using namespace biaslab::sweep;

TEST(SweepValues, NumbersAreWholeStrings) {
  double v = -1;
  EXPECT_TRUE(parse_number("0.05", &v));
  EXPECT_DOUBLE_EQ(v, 0.05);
  EXPECT_TRUE(parse_number("1e-3"));
  for (const char* s : {"", "1x", "[1, 2]", "abc", "3 "}) EXPECT_FALSE(parse_number(s)) << s;
  EXPECT_TRUE(same_value("1", "1.0"));
  EXPECT_TRUE(same_value("abc", "abc"));
  EXPECT_FALSE(same_value("", "0"));
  EXPECT_FALSE(same_value("1", "1x"));
}

TEST(SweepValues, RunNamesSqueezeAndFileNamesReplace) {
  EXPECT_EQ(name_part("[8, 16, 32]"), "8-16-32");
  EXPECT_EQ(name_part("vit_lite_p4"), "vit_lite_p4");
  EXPECT_EQ(name_part("/ /"), "none");
  EXPECT_EQ(file_part("[8, 16, 32]"), "-8--16--32-");
  EXPECT_EQ(file_part("1.0e-3+x"), "1.0e-3+x");
}
