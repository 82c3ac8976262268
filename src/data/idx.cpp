#include "data/idx.h"

#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/errors.h"
#include "core/input_file.h"

namespace biaslab {
namespace {

constexpr uint32_t kImageMagic = 0x00000803;  // unsigned byte, 3 dimensions
constexpr uint32_t kLabelMagic = 0x00000801;  // unsigned byte, 1 dimension
// Largest count we accept in a header field: guards against garbage headers asking
// for absurd allocations.
constexpr uint32_t kMaxDim = 1u << 28;
constexpr uint64_t kMaxBytes = uint64_t(1) << 36;  // 64 GiB of pixels

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

GzFile open_read(const std::string& path) {
  if (!std::filesystem::exists(path)) throw DataError(path + ": file does not exist");
  require_regular_file<DataError>(path, "an IDX file");
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) throw DataError(path + ": cannot open for reading");
  return f;
}

// The most bytes `path` can hold once decompressed: its size for a plain file, and for
// gzip the size times deflate's largest ratio (1032:1), plus headers. A header that
// declares more than that lies, and is refused before its tensor is allocated.
uint64_t max_content_bytes(const std::string& path) {
  const uint64_t size = std::filesystem::file_size(path);
  unsigned char magic[2] = {0, 0};
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    if (std::fread(magic, 1, 2, f) != 2) magic[0] = 0;
    std::fclose(f);
  }
  const bool gzip = magic[0] == 0x1f && magic[1] == 0x8b;
  return gzip ? size * 1032 + 1024 : size;
}

void check_declared_size(const std::string& path, uint64_t declared, const std::string& what) {
  // Small tensors are allocated as declared: reading then says exactly where the data ends.
  constexpr uint64_t kTrusted = uint64_t(64) << 20;
  const uint64_t room = max_content_bytes(path);
  if (declared > room && declared > kTrusted)
    throw DataError(path + ": the header declares " + what + " (" + format_bytes(declared) +
                    "), more than a file of " + format_bytes(std::filesystem::file_size(path)) +
                    " can hold: truncated or not an IDX file");
}

// zlib's complaint (damaged deflate data, or a CRC-32 or length in the gzip trailer that
// does not match what was inflated) as a DataError naming the file.
[[noreturn]] void throw_corrupt(gzFile_s* f, const std::string& path, const std::string& where) {
  int err = 0;
  const char* msg = gzerror(f, &err);
  throw DataError(path + ": corrupt compressed data" + where + " (" + (msg && *msg ? msg : "zlib error") +
                  "): the gzip stream or its checksum is damaged; fetch the file again");
}

// Reads exactly n bytes; a short read is a truncated (or corrupt) file.
void read_exact(gzFile_s* f, void* dst, size_t n, const std::string& path, const std::string& what) {
  size_t done = 0;
  auto* out = static_cast<unsigned char*>(dst);
  while (done < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
    int got = gzread(f, out + done, chunk);
    if (got < 0) throw_corrupt(f, path, " while reading " + what);
    if (got == 0)
      throw DataError(path + ": truncated: expected " + std::to_string(n) + " bytes of " + what + ", found " +
                      std::to_string(done));
    done += static_cast<size_t>(got);
  }
}

uint32_t read_u32(gzFile_s* f, const std::string& path, const std::string& what) {
  unsigned char b[4];
  read_exact(f, b, 4, path, what);
  return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | uint32_t(b[3]);
}

// Reading past the data makes zlib check the gzip trailer (CRC-32 and length): a damaged
// stream that happened to inflate is caught here.
void expect_end(gzFile_s* f, const std::string& path) {
  unsigned char extra;
  const int got = gzread(f, &extra, 1);
  if (got > 0) throw DataError(path + ": longer than its header says (trailing bytes after the data)");
  if (got < 0) throw_corrupt(f, path, " after the data");
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

void check_magic(uint32_t magic, uint32_t expected, const std::string& path, const std::string& kind) {
  if (magic != expected)
    throw DataError(path + ": not an IDX " + kind + " file: magic number " + hex(magic) + ", expected " +
                    hex(expected));
}

void check_dim(uint32_t v, const std::string& path, const std::string& name) {
  if (v == 0 || v > kMaxDim)
    throw DataError(path + ": implausible " + name + " " + std::to_string(v) + " in the header");
}

// gzip when the name ends in .gz, else plain ("wb" + "T" = transparent write).
GzFile open_write(const std::string& path) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  GzFile f(gzopen(path.c_str(), gz ? "wb" : "wbT"));
  if (!f) throw DataError(path + ": cannot open for writing");
  return f;
}

void write_bytes(gzFile_s* f, const void* src, size_t n, const std::string& path) {
  if (n > 0 && gzwrite(f, src, static_cast<unsigned>(n)) != static_cast<int>(n))
    throw DataError(path + ": write failed");
}

void write_u32(gzFile_s* f, uint32_t v, const std::string& path) {
  unsigned char b[4] = {static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16),
                        static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
  write_bytes(f, b, 4, path);
}

}  // namespace

torch::Tensor read_idx_images(const std::string& path) {
  GzFile f = open_read(path);
  check_magic(read_u32(f.get(), path, "the header"), kImageMagic, path, "image");
  const uint32_t n = read_u32(f.get(), path, "the header");
  const uint32_t h = read_u32(f.get(), path, "the header");
  const uint32_t w = read_u32(f.get(), path, "the header");
  check_dim(n, path, "image count");
  check_dim(h, path, "height");
  check_dim(w, path, "width");
  if (uint64_t(n) * h * w > kMaxBytes)
    throw DataError(path + ": implausible header: " + std::to_string(n) + " images of " + std::to_string(h) + "x" +
                    std::to_string(w) + " exceed " + std::to_string(kMaxBytes >> 30) + " GiB");
  check_declared_size(path, 16 + uint64_t(n) * h * w,
                      std::to_string(n) + " images of " + std::to_string(h) + "x" + std::to_string(w));
  auto images = torch::empty({int64_t(n), 1, int64_t(h), int64_t(w)}, torch::kUInt8);
  read_exact(f.get(), images.data_ptr<uint8_t>(), size_t(n) * h * w, path, "pixels");
  expect_end(f.get(), path);
  return images;
}

torch::Tensor read_idx_labels(const std::string& path) {
  GzFile f = open_read(path);
  check_magic(read_u32(f.get(), path, "the header"), kLabelMagic, path, "label");
  const uint32_t n = read_u32(f.get(), path, "the header");
  check_dim(n, path, "label count");
  check_declared_size(path, 8 + uint64_t(n), std::to_string(n) + " labels");
  auto raw = torch::empty({int64_t(n)}, torch::kUInt8);
  read_exact(f.get(), raw.data_ptr<uint8_t>(), n, path, "labels");
  expect_end(f.get(), path);
  return raw.to(torch::kInt64);
}

void write_idx_images(const std::string& path, const torch::Tensor& images) {
  TORCH_CHECK(images.dim() == 4 && images.size(1) == 1 && images.scalar_type() == torch::kUInt8,
              "write_idx_images: expected uint8 (N, 1, H, W), got ", images.sizes());
  auto x = images.contiguous();
  GzFile f = open_write(path);
  write_u32(f.get(), kImageMagic, path);
  for (int d : {0, 2, 3}) write_u32(f.get(), static_cast<uint32_t>(x.size(d)), path);
  write_bytes(f.get(), x.data_ptr<uint8_t>(), static_cast<size_t>(x.numel()), path);
}

void write_idx_labels(const std::string& path, const torch::Tensor& labels) {
  TORCH_CHECK(labels.dim() == 1, "write_idx_labels: expected (N), got ", labels.sizes());
  auto x = labels.to(torch::kUInt8).contiguous();
  GzFile f = open_write(path);
  write_u32(f.get(), kLabelMagic, path);
  write_u32(f.get(), static_cast<uint32_t>(x.size(0)), path);
  write_bytes(f.get(), x.data_ptr<uint8_t>(), static_cast<size_t>(x.numel()), path);
}

}  // namespace biaslab
