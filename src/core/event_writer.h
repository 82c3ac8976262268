#pragma once
// TensorBoard event files: TFRecord-framed `Event` protobufs (core/proto/tensorboard.proto)
// in LOGDIR/events.out.tfevents.<time>.<host>.<pid>, which `tensorboard --logdir` reads:
// scalars, PNG images and the hparams plugin's session records.
//
// A writer that opens a folder already holding its events file continues that file:
// the events of steps past `keep_up_to_step` (a resumed run's steps after its
// checkpoint) and the values whose tag starts with one of `rewrite_prefixes` (records
// the caller writes again in full) are removed first, so the curves of a resumed run
// are continuous and no step appears twice. Built without protobuf
// (-DBIASLAB_WITH_TENSORBOARD=OFF) nothing is written; kWithTensorBoard says which.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace biaslab {

#if BIASLAB_WITH_TENSORBOARD
inline constexpr bool kWithTensorBoard = true;
#else
inline constexpr bool kWithTensorBoard = false;
#endif

/// An hparams value: TensorBoard's HParams table shows strings, numbers and booleans.
using HParam = std::variant<std::string, double, bool>;

class EventWriter {
 public:
  EventWriter(const std::filesystem::path& logdir, int64_t keep_up_to_step,
              std::vector<std::string> rewrite_prefixes = {});
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  void scalar(const std::string& tag, int64_t step, double value);
  /// A PNG file's bytes as an image summary (width and height read from its header).
  void png_image(const std::string& tag, int64_t step, const std::string& png_bytes);
  /// The hparams plugin's session start (the run's hyper-parameters) and end records.
  void session_start(const std::map<std::string, HParam>& hparams, const std::string& group);
  void session_end(bool success);
  /// Writes what is buffered to the file (every call above ends with a flush).
  void flush();
  const std::filesystem::path& file() const { return file_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::filesystem::path file_;
};

/// The tags of session_start / session_end, for rewrite_prefixes.
inline constexpr const char* kHParamsTagPrefix = "_hparams_/";

namespace detail {
/// CRC-32C (Castagnoli) of `data`, and TFRecord's masked form of it.
uint32_t crc32c(const void* data, size_t size);
uint32_t masked_crc32c(const void* data, size_t size);
/// One TFRecord: length, masked CRC of the length, data, masked CRC of the data.
std::string tfrecord(const std::string& data);
/// The records of a TFRecord file; stops at the first incomplete or corrupt one.
std::vector<std::string> read_tfrecords(const std::filesystem::path& file);
}  // namespace detail

}  // namespace biaslab
