#include "core/event_writer.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <fstream>

#include "core/errors.h"
#include "core/fs.h"

#if BIASLAB_WITH_TENSORBOARD
#include "core/proto/tensorboard.pb.h"
#endif

namespace biaslab {
namespace fs = std::filesystem;

namespace detail {

uint32_t crc32c(const void* data, size_t size) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected Castagnoli
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

namespace {
template <typename T>
void put_le(std::string& out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(char((v >> (8 * i)) & 0xFF));
}
template <typename T>
T get_le(const char* p) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= T(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
}  // namespace

std::string tfrecord(const std::string& data) {
  std::string out, length;
  put_le<uint64_t>(length, data.size());
  out += length;
  put_le<uint32_t>(out, masked_crc32c(length.data(), length.size()));
  out += data;
  put_le<uint32_t>(out, masked_crc32c(data.data(), data.size()));
  return out;
}

std::vector<std::string> read_tfrecords(const fs::path& file) {
  std::vector<std::string> records;
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  size_t pos = 0;
  while (pos + 12 <= bytes.size()) {
    const char* p = bytes.data() + pos;
    const uint64_t n = get_le<uint64_t>(p);
    if (get_le<uint32_t>(p + 8) != masked_crc32c(p, 8) || n > bytes.size() - pos - 16) break;
    if (get_le<uint32_t>(p + 12 + n) != masked_crc32c(p + 12, n)) break;
    records.emplace_back(p + 12, n);
    pos += 16 + n;
  }
  return records;
}

}  // namespace detail

#if BIASLAB_WITH_TENSORBOARD

namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

bool starts_with_any(const std::string& tag, const std::vector<std::string>& prefixes) {
  for (const auto& p : prefixes)
    if (tag.rfind(p, 0) == 0) return true;
  return false;
}
}  // namespace

struct EventWriter::Impl {
  std::ofstream out;
  fs::path file;

  void write(tensorboard::Event& e) {
    if (e.wall_time() == 0) e.set_wall_time(now_s());
    out << detail::tfrecord(e.SerializeAsString()) << std::flush;
    if (!out) throw Error(file.string() + ": write failed (disk full?)");
  }
  void value(int64_t step, tensorboard::Summary::Value v) {
    tensorboard::Event e;
    e.set_step(step);
    *e.mutable_summary()->add_value() = std::move(v);
    write(e);
  }
  void hparams(const std::string& tag, const tensorboard::HParamsPluginData& data) {
    tensorboard::Summary::Value v;
    v.set_tag(tag);
    auto* plugin = v.mutable_metadata()->mutable_plugin_data();
    plugin->set_plugin_name("hparams");
    plugin->set_content(data.SerializeAsString());
    value(0, std::move(v));
  }
};

EventWriter::EventWriter(const fs::path& logdir, int64_t keep_up_to_step, std::vector<std::string> rewrite_prefixes)
    : impl_(std::make_unique<Impl>()) {
  fs::create_directories(logdir);
  // Continue this run's events file (the first one, by name), keeping what stays valid.
  std::vector<fs::path> existing;
  for (const auto& e : fs::directory_iterator(logdir))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0 && e.is_regular_file())
      existing.push_back(e.path());
  std::sort(existing.begin(), existing.end());
  std::string kept;
  if (!existing.empty()) {
    file_ = existing.front();
    rewrite_prefixes.emplace_back(kHParamsTagPrefix);
    for (const std::string& record : detail::read_tfrecords(file_)) {
      tensorboard::Event e;
      if (!e.ParseFromString(record)) break;
      if (e.has_summary()) {
        if (e.step() > keep_up_to_step) continue;
        tensorboard::Summary keep;
        for (const auto& v : e.summary().value())
          if (!starts_with_any(v.tag(), rewrite_prefixes)) *keep.add_value() = v;
        if (keep.value_size() == 0) continue;
        *e.mutable_summary() = std::move(keep);
      }
      kept += detail::tfrecord(e.SerializeAsString());
    }
    atomic_write(file_, kept);
  } else {
    const auto seconds = int64_t(now_s());
    file_ = logdir / ("events.out.tfevents." + std::to_string(seconds) + "." + hostname() + "." +
                      std::to_string(::getpid()) + ".0");
  }
  impl_->file = file_;
  impl_->out.open(file_, std::ios::binary | std::ios::app);
  if (!impl_->out) throw Error(file_.string() + ": cannot open for writing");
  if (kept.empty()) {
    tensorboard::Event version;
    version.set_file_version("brain.Event:2");
    impl_->write(version);
  }
}

EventWriter::~EventWriter() = default;

void EventWriter::scalar(const std::string& tag, int64_t step, double value) {
  tensorboard::Summary::Value v;
  v.set_tag(tag);
  v.set_simple_value(float(value));
  impl_->value(step, std::move(v));
}

void EventWriter::png_image(const std::string& tag, int64_t step, const std::string& png) {
  // PNG: 8-byte signature, then the IHDR chunk: length, "IHDR", width, height (big endian),
  // bit depth, colour type.
  if (png.size() < 26 || png.compare(1, 3, "PNG") != 0 || png.compare(12, 4, "IHDR") != 0)
    throw Error("tensorboard image " + tag + ": not a PNG file");
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(png[at + i]);
    return int32_t(v);
  };
  const int colour = static_cast<unsigned char>(png[25]);
  tensorboard::Summary::Value v;
  v.set_tag(tag);
  auto* image = v.mutable_image();
  image->set_width(be32(16));
  image->set_height(be32(20));
  image->set_colorspace(colour == 0 ? 1 : colour == 4 ? 2 : colour == 6 ? 4 : 3);
  image->set_encoded_image_string(png);
  impl_->value(step, std::move(v));
}

void EventWriter::session_start(const std::map<std::string, HParam>& hparams, const std::string& group) {
  tensorboard::HParamsPluginData data;
  data.set_version(0);
  auto* start = data.mutable_session_start_info();
  start->set_group_name(group);
  start->set_start_time_secs(now_s());
  for (const auto& [name, value] : hparams) {
    google::protobuf::Value& v = (*start->mutable_hparams())[name];
    if (const auto* s = std::get_if<std::string>(&value)) v.set_string_value(*s);
    if (const auto* d = std::get_if<double>(&value)) v.set_number_value(*d);
    if (const auto* b = std::get_if<bool>(&value)) v.set_bool_value(*b);
  }
  impl_->hparams(std::string(kHParamsTagPrefix) + "session_start_info", data);
}

void EventWriter::session_end(bool success) {
  tensorboard::HParamsPluginData data;
  data.set_version(0);
  auto* end = data.mutable_session_end_info();
  end->set_status(success ? tensorboard::STATUS_SUCCESS : tensorboard::STATUS_FAILURE);
  end->set_end_time_secs(now_s());
  impl_->hparams(std::string(kHParamsTagPrefix) + "session_end_info", data);
}

void EventWriter::flush() { impl_->out.flush(); }

#else  // built without protobuf: the writer writes nothing

struct EventWriter::Impl {};
EventWriter::EventWriter(const fs::path&, int64_t, std::vector<std::string>) {}
EventWriter::~EventWriter() = default;
void EventWriter::scalar(const std::string&, int64_t, double) {}
void EventWriter::png_image(const std::string&, int64_t, const std::string&) {}
void EventWriter::session_start(const std::map<std::string, HParam>&, const std::string&) {}
void EventWriter::session_end(bool) {}
void EventWriter::flush() {}

#endif

}  // namespace biaslab
