#include "core/event_writer.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/errors.h"
#include "test_util.h"

using namespace biaslab;
namespace fs = std::filesystem;

TEST(EventWriter, Crc32cAndTfRecordFraming) {
  // The CRC-32C check value (RFC 3720, appendix B.4).
  EXPECT_EQ(biaslab::detail::crc32c("123456789", 9), 0xE3069283u);
  test::TempDir tmp;
  const std::string two = biaslab::detail::tfrecord("first") + biaslab::detail::tfrecord(std::string(300, 'x'));
  EXPECT_EQ(two.size(), 16 + 5 + 16 + 300u);
  // A third record cut short by a crash, then garbage: the complete ones are read.
  test::write_text(tmp / "f", two + biaslab::detail::tfrecord("third").substr(0, 10));
  const auto records = biaslab::detail::read_tfrecords(tmp / "f");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0], "first");
  EXPECT_EQ(records[1], std::string(300, 'x'));
  std::string corrupt = two;
  corrupt[20] ^= 1;  // inside the first record's data: its CRC no longer matches
  test::write_text(tmp / "g", corrupt);
  EXPECT_TRUE(biaslab::detail::read_tfrecords(tmp / "g").empty());
}

TEST(EventWriter, ContinuesItsFileDroppingLaterStepsAndRewrittenTags) {
  if (!kWithTensorBoard) GTEST_SKIP() << "built without TensorBoard support";
  test::TempDir tmp;
  fs::path file;
  {
    EventWriter w(tmp / "tb", 0);
    for (int64_t s = 1; s <= 6; ++s) w.scalar("train/loss", s, 1.0 / double(s));
    w.scalar("epoch/acc", 3, 0.5);
    w.scalar("epoch/acc", 6, 0.6);
    w.session_start({{"optim.lr", 0.1}, {"model.preset", std::string("resnet20")}, {"data.hflip", true}}, "");
    file = w.file();
  }
  // version + 6 + 2 + hparams = 10 records.
  EXPECT_EQ(biaslab::detail::read_tfrecords(file).size(), 10u);
  {
    // Resumed from step 4: train/loss 1..4 stay; epoch/* and the hparams go (rewritten).
    EventWriter w(tmp / "tb", 4, {"epoch/"});
    EXPECT_EQ(w.file(), file) << "the same events file continues";
    EXPECT_EQ(biaslab::detail::read_tfrecords(file).size(), 5u);  // version + 4 steps
    w.scalar("epoch/acc", 3, 0.5);
    w.scalar("train/loss", 5, 0.2);
  }
  EXPECT_EQ(biaslab::detail::read_tfrecords(file).size(), 7u);
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(tmp / "tb")) ++files;
  EXPECT_EQ(files, 1);
  EXPECT_THROW(EventWriter(tmp / "tb", 0).png_image("x", 1, "not a png at all, long enough..."), Error);
}
