#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <iterator>

#include <sys/stat.h>
#include <zlib.h>

#include <fstream>

#include "core/errors.h"
#include "data/idx.h"
#include "test_util.h"

using namespace biaslab;
using biaslab::test::TempDir;

namespace {

torch::Tensor sample_images() { return torch::arange(3 * 4 * 5, torch::kLong).remainder(256).to(torch::kUInt8).view({3, 1, 4, 5}); }

std::string error_reading_images(const std::string& path) {
  try {
    read_idx_images(path);
  } catch (const DataError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a DataError for " << path;
  return "";
}

void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

}  // namespace

TEST(Idx, RoundTripPlainAndGzip) {
  TempDir dir;
  auto images = sample_images();
  auto labels = torch::tensor({7, 0, 9}, torch::kLong);
  for (const std::string suffix : {"", ".gz"}) {
    const auto ip = (dir / ("img" + suffix)).string(), lp = (dir / ("lbl" + suffix)).string();
    write_idx_images(ip, images);
    write_idx_labels(lp, labels);
    auto back = read_idx_images(ip);
    EXPECT_EQ(back.sizes(), images.sizes());
    EXPECT_TRUE(torch::equal(back, images));
    EXPECT_TRUE(torch::equal(read_idx_labels(lp), labels));
  }
  // The gzip file really is compressed (starts with the gzip magic), the plain one is not.
  std::ifstream gz((dir / "img.gz").string(), std::ios::binary);
  EXPECT_EQ(gz.get(), 0x1f);
  EXPECT_EQ(gz.get(), 0x8b);
}

TEST(Idx, HeaderIsBigEndianIdx) {
  TempDir dir;
  const auto p = (dir / "img").string();
  write_idx_images(p, sample_images());
  std::ifstream in(p, std::ios::binary);
  std::vector<unsigned char> head(16);
  in.read(reinterpret_cast<char*>(head.data()), 16);
  EXPECT_EQ(head, (std::vector<unsigned char>{0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5}));
}

TEST(Idx, MissingFile) {
  EXPECT_NE(error_reading_images("/nonexistent/train-images").find("/nonexistent/train-images: file does not exist"),
            std::string::npos);
}

TEST(Idx, WrongMagicNamesFileAndNumbers) {
  TempDir dir;
  const auto p = (dir / "labels-as-images").string();
  write_idx_labels(p, torch::tensor({1, 2}, torch::kLong));
  const std::string msg = error_reading_images(p);
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("magic number 0x00000801, expected 0x00000803"), std::string::npos) << msg;
}

TEST(Idx, TruncatedPixels) {
  TempDir dir;
  const auto p = (dir / "short").string();
  // Header promises 2 images of 2x2 = 8 bytes, only 5 follow.
  write_bytes(p, {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4, 5});
  const std::string msg = error_reading_images(p);
  EXPECT_NE(msg.find(p + ": truncated: expected 8 bytes of pixels, found 5"), std::string::npos) << msg;
}

TEST(Idx, TruncatedHeader) {
  TempDir dir;
  const auto p = (dir / "tiny").string();
  write_bytes(p, {0, 0, 8});
  EXPECT_NE(error_reading_images(p).find("truncated"), std::string::npos);
}

TEST(Idx, TrailingBytes) {
  TempDir dir;
  const auto p = (dir / "long").string();
  write_bytes(p, {0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 9, 9});
  EXPECT_NE(error_reading_images(p).find("longer than its header says"), std::string::npos);
}

TEST(Idx, CorruptGzip) {
  TempDir dir;
  const auto good = (dir / "img.gz").string();
  write_idx_images(good, torch::randint(0, 255, {50, 1, 8, 8}).to(torch::kUInt8));
  std::ifstream in(good, std::ios::binary);
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), {});
  for (size_t i = 20; i < bytes.size() - 8; ++i) bytes[i] ^= 0x5a;  // scramble the deflate stream
  const auto bad = (dir / "bad.gz").string();
  write_bytes(bad, bytes);
  const std::string msg = error_reading_images(bad);
  EXPECT_NE(msg.find(bad), std::string::npos) << msg;
}

TEST(Idx, ImplausibleHeader) {
  TempDir dir;
  const auto p = (dir / "zero").string();
  write_bytes(p, {0, 0, 8, 3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 2});
  EXPECT_NE(error_reading_images(p).find("implausible image count 0"), std::string::npos);
}

TEST(Idx, GzipChecksumIsVerifiedToTheEnd) {
  // Only the trailer's CRC-32 is wrong: the data inflates, the checksum says it is not the
  // data that was compressed.
  TempDir dir;
  const auto good = (dir / "img.gz").string();
  write_idx_images(good, torch::randint(0, 255, {50, 1, 8, 8}).to(torch::kUInt8));
  std::ifstream in(good, std::ios::binary);
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), {});
  bytes[bytes.size() - 7] ^= 0x01;  // inside the CRC-32 (the last 8 bytes: CRC, then length)
  const auto bad = (dir / "crc.gz").string();
  write_bytes(bad, bytes);
  const std::string msg = error_reading_images(bad);
  EXPECT_NE(msg.find(bad + ": corrupt compressed data"), std::string::npos) << msg;
  EXPECT_NE(msg.find("incorrect data check"), std::string::npos) << msg;
  // The labels reader verifies too.
  const auto labels = (dir / "lab.gz").string();
  write_idx_labels(labels, torch::randint(0, 9, {100}, torch::kLong));
  std::ifstream lin(labels, std::ios::binary);
  std::vector<unsigned char> lb((std::istreambuf_iterator<char>(lin)), {});
  lb[lb.size() - 7] ^= 0x01;
  write_bytes(labels, lb);
  EXPECT_THROW(read_idx_labels(labels), DataError);
}

TEST(Idx, DeclaredSizeBeyondWhatTheFileCanHoldIsRefusedBeforeAllocating) {
  TempDir dir;
  // 2^27 images of 16x16 (32 GiB) declared in a 1 KB plain file, and in a small gzip file.
  // Filled first, then the header written over its start (not an initializer list grown by
  // resize(), which GCC 12 -O3 warns about falsely under -Warray-bounds).
  std::vector<unsigned char> header(1024, 7);
  const unsigned char declared[] = {0, 0, 8, 3, 8, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 16};
  std::copy(std::begin(declared), std::end(declared), header.begin());
  const auto plain = (dir / "big").string();
  write_bytes(plain, header);
  std::string msg = error_reading_images(plain);
  EXPECT_NE(msg.find(plain + ": the header declares 134217728 images of 16x16 (32 GiB), more than a file of 1 KiB"),
            std::string::npos)
      << msg;
  // The same bytes gzip-compressed: 1 KB inflates to at most ~1 MB, far from 32 GiB.
  const auto gz = (dir / "big.gz").string();
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_TRUE(f);
  ASSERT_EQ(gzwrite(f, header.data(), unsigned(header.size())), int(header.size()));
  gzclose(f);
  msg = error_reading_images(gz);
  EXPECT_NE(msg.find(gz + ": the header declares 134217728 images of 16x16"), std::string::npos) << msg;
  // A plain header declaring 2^26 labels in a 100-byte file.
  std::vector<unsigned char> lab(100, 1);
  const unsigned char lab_declared[] = {0, 0, 8, 1, 4, 0, 0, 0};
  std::copy(std::begin(lab_declared), std::end(lab_declared), lab.begin());
  const auto lp = (dir / "labels").string();
  write_bytes(lp, lab);
  try {
    read_idx_labels(lp);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("67108864 labels"), std::string::npos) << e.what();
  }
}

TEST(Idx, SpecialFilesAreRefusedNotOpened) {
  TempDir dir;
  const auto fifo = (dir / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(error_reading_images(fifo).find("fifo: is a FIFO (named pipe)"), std::string::npos);
  EXPECT_NE(error_reading_images(dir.path().string()).find("is a directory"), std::string::npos);
}
