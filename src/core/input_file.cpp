#include "core/input_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace biaslab {
namespace fs = std::filesystem;

std::string input_file_problem(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return "does not exist";
    return std::string("cannot be read (") + std::strerror(errno) + ")";
  }
  switch (st.st_mode & S_IFMT) {
    case S_IFREG: return "";
    case S_IFDIR: return "is a directory";
    case S_IFIFO: return "is a FIFO (named pipe)";
    case S_IFSOCK: return "is a socket";
    case S_IFCHR: return "is a character device";
    case S_IFBLK: return "is a block device";
    default: return "is not a regular file";
  }
}

std::string format_bytes(uint64_t bytes) {
  char buf[64];
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = double(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  std::snprintf(buf, sizeof buf, "%.3g %s", v, units[u]);
  return buf;
}

std::string read_input_file(const fs::path& path, uint64_t max_bytes, const std::string& what) {
  require_regular_file(path, what);
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec) throw Error(path.string() + ": cannot read " + what + ": " + ec.message());
  if (size > max_bytes)
    throw Error(path.string() + ": " + format_bytes(size) + " is larger than the " + format_bytes(max_bytes) +
                " limit for " + what + "s");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path.string() + ": " + std::strerror(errno));
  std::string out(size, '\0');
  in.read(out.data(), std::streamsize(size));
  if (uint64_t(in.gcount()) != size) throw Error(path.string() + ": cannot read " + what + " (it changed while read)");
  if (in.peek() != std::char_traits<char>::eof())
    throw Error(path.string() + ": grew while read; " + what + "s are limited to " + format_bytes(max_bytes));
  return out;
}

std::string text_problem(const std::string& s, bool controls_ok) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = p[i];
    if (!controls_ok && (c < 0x20 || c == 0x7f)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "a control character (0x%02x) at byte %zu", c, i + 1);
      return buf;
    }
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = len > 0 && i + len <= n;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (p[i + k] & 0xc0) == 0x80;
      cp = (cp << 6) | (p[i + k] & 0x3f);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8 either.
    if (ok && ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
               (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff))
      ok = false;
    if (!ok) return "invalid UTF-8 at byte " + std::to_string(i + 1);
    i += len;
  }
  return "";
}

}  // namespace biaslab
