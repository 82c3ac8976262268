// core/input_file: regular-file and size rules for inputs, the output-folder rule, text
// checks and stale temporaries.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>

#include "core/errors.h"
#include "core/fs.h"
#include "core/input_file.h"
#include "core/output_folder.h"
#include "test_util.h"

using namespace biaslab;
using biaslab::test::TempDir;
using biaslab::test::write_text;
namespace fs = std::filesystem;

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

// A PID that is certainly not alive: a child that has exited and been reaped.
long dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return long(pid);
}

}  // namespace

TEST(InputFile, SpecialFilesAreNamedForWhatTheyAre) {
  TempDir dir;
  write_text(dir / "ok.yaml", "a: 1\n");
  EXPECT_EQ(input_file_problem(dir / "ok.yaml"), "");
  EXPECT_EQ(input_file_problem(dir / "missing"), "does not exist");
  EXPECT_EQ(input_file_problem(dir.path()), "is a directory");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(input_file_problem(dir / "fifo"), "is a FIFO (named pipe)");
  EXPECT_EQ(input_file_problem("/dev/zero"), "is a character device");
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock = (dir / "sock").string();
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(input_file_problem(sock), "is a socket");
  ::close(s);
  // Reading one never blocks: a FIFO without a writer is refused, not opened.
  const std::string msg = message_of([&] { read_input_file(dir / "fifo", 1024, "config file"); });
  EXPECT_NE(msg.find("fifo: is a FIFO (named pipe); config file must be a regular file"), std::string::npos) << msg;
  EXPECT_NE(message_of([&] { read_file(dir / "fifo"); }).find("is a FIFO"), std::string::npos);
}

TEST(InputFile, SizeLimitNamesTheFileTheSizeAndTheLimit) {
  TempDir dir;
  write_text(dir / "big.yaml", std::string(3000, '#'));
  const std::string msg = message_of([&] { read_input_file(dir / "big.yaml", 2048, "config file"); });
  EXPECT_NE(msg.find("big.yaml: 2.93 KiB is larger than the 2 KiB limit for config files"), std::string::npos) << msg;
  EXPECT_EQ(read_input_file(dir / "big.yaml", 3000, "config file").size(), 3000u);
  EXPECT_EQ(format_bytes(512), "512 bytes");
  EXPECT_EQ(format_bytes(uint64_t(3) << 30), "3 GiB");
}

TEST(InputFile, TextProblemsFindInvalidUtf8AndControlCharacters) {
  EXPECT_EQ(text_problem("plain name-1.0"), "");
  EXPECT_EQ(text_problem("K\xc3\xa4se \xe2\x82\xac \xf0\x9f\x98\x80"), "");  // Käse € and an emoji
  EXPECT_EQ(text_problem("a\xff\xfe"), "invalid UTF-8 at byte 2");
  EXPECT_EQ(text_problem("\xc0\xaf"), "invalid UTF-8 at byte 1");       // overlong '/'
  EXPECT_EQ(text_problem("\xed\xa0\x80"), "invalid UTF-8 at byte 1");   // a surrogate
  EXPECT_EQ(text_problem("ab\xe2\x82"), "invalid UTF-8 at byte 3");     // cut short
  EXPECT_EQ(text_problem("a\tb"), "a control character (0x09) at byte 2");
  EXPECT_EQ(text_problem("a\tb", /*controls_ok=*/true), "");
}

TEST(OutputFolder, ForeignFoldersAreRefusedAndNamedWithTheirContents) {
  TempDir dir;
  auto ours = [](const fs::path& d) { return fs::exists(d / "plan.json"); };
  EXPECT_EQ(folder_state(dir / "new", ours), FolderState::absent);
  EXPECT_EQ(folder_state(dir.path(), ours), FolderState::empty);
  write_text(dir / ".lock", "");
  write_text(dir / ".config.yaml.tmp.12345", "");
  EXPECT_EQ(folder_state(dir.path(), ours), FolderState::empty) << "a lock and temporaries are leftovers";
  write_text(dir / "notes.txt", "mine");
  EXPECT_EQ(folder_state(dir.path(), ours), FolderState::foreign);
  const std::string msg = message_of([&] { claim_output_folder(dir.path(), "--out", "a biaslab sweep directory", ours); });
  EXPECT_NE(msg.find(dir.path().string() + " is not empty and is not a biaslab sweep directory"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("notes.txt"), std::string::npos) << msg;
  write_text(dir / "plan.json", "{}");
  EXPECT_EQ(folder_state(dir.path(), ours), FolderState::ours);
  write_text(dir / "file", "x");
  EXPECT_EQ(folder_state(dir / "file", ours), FolderState::foreign) << "a file is not a folder";
  try {
    claim_output_folder(dir / "file", "--out", "a folder", ours);
    FAIL();
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.exit_code(), 5);
  }
}

TEST(OutputFolder, StaleTemporariesOfDeadProcessesAreRemovedOthersKept) {
  TempDir dir;
  const long dead = dead_pid();
  const std::string stale = ".best.pt.tmp." + std::to_string(dead);
  const std::string live = ".best.pt.tmp." + std::to_string(::getpid());
  write_text(dir / stale, "x");
  write_text(dir / live, "x");
  fs::create_directories(dir / (".analysis.partial." + std::to_string(dead)));
  write_text(dir / ".other.tmp.x", "x");       // not a PID: not ours
  write_text(dir / "best.pt.tmp.1", "x");      // not hidden: not ours
  long pid = 0;
  EXPECT_TRUE(is_temporary_name(stale, &pid));
  EXPECT_EQ(pid, dead);
  EXPECT_EQ(remove_stale_temporaries(dir.path(), "other.pt"), 0) << "only the named file's temporaries";
  EXPECT_EQ(remove_stale_temporaries(dir.path()), 2);
  EXPECT_FALSE(fs::exists(dir / stale));
  EXPECT_TRUE(fs::exists(dir / live));
  EXPECT_TRUE(fs::exists(dir / ".other.tmp.x"));
  EXPECT_TRUE(fs::exists(dir / "best.pt.tmp.1"));
}

TEST(OutputFolder, WholeFolderWritesReplaceOnlyWhatTheyWrote) {
  TempDir dir;
  const fs::path out = dir / "analysis";
  auto fill = [](const std::string& text) {
    return [text](const fs::path& tmp) {
      write_text(tmp / "a.txt", text);
      fs::create_directories(tmp / "sub");
      write_text(tmp / "sub" / "b.txt", text);
    };
  };
  write_folder_atomically(out, fill("1"), "--out", "a biaslab analysis folder");
  EXPECT_EQ(read_file(out / kFolderManifest), "a.txt\nsub/b.txt\n");
  write_folder_atomically(out, fill("2"), "--out", "a biaslab analysis folder");
  EXPECT_EQ(read_file(out / "sub" / "b.txt"), "2");
  // A file the user added makes it theirs: refused, nothing touched.
  write_text(out / "sub" / "notes.txt", "mine");
  const std::string msg =
      message_of([&] { write_folder_atomically(out, fill("3"), "--out", "a biaslab analysis folder"); });
  EXPECT_NE(msg.find("is not a biaslab analysis folder (it holds files biaslab did not write: sub/notes.txt)"),
            std::string::npos)
      << msg;
  EXPECT_EQ(read_file(out / "sub" / "notes.txt"), "mine");
  EXPECT_EQ(read_file(out / "a.txt"), "2");
  // A folder without a manifest is not replaced either.
  fs::create_directories(dir / "theirs");
  write_text(dir / "theirs" / "x", "x");
  EXPECT_THROW(write_folder_atomically(dir / "theirs", fill("1"), "--out", "a folder"), CheckpointError);
  EXPECT_TRUE(fs::exists(dir / "theirs" / "x"));
  for (const auto& e : fs::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().find(".partial."), std::string::npos) << "a partial folder was left";
}

TEST(OutputFolder, TrailingSeparatorsAndDotsAreNormalisedOrRefused) {
  TempDir dir;
  auto fill = [](const fs::path& tmp) { write_text(tmp / "a.txt", "1"); };
  write_folder_atomically((dir / "out").string() + "/", fill, "--out", "a biaslab analysis folder");
  EXPECT_EQ(read_file(dir / "out" / "a.txt"), "1");
  write_folder_atomically((dir / "out").string() + "//", fill, "--out", "a biaslab analysis folder");
  EXPECT_EQ(read_file(dir / "out" / kFolderManifest), "a.txt\n") << "replaced, not nested";
  for (const fs::path& bad : {fs::path("."), fs::path(".."), fs::path("./"), fs::path("/")})
    EXPECT_THROW(write_folder_atomically(bad, fill, "--out", "a folder"), ConfigError) << bad;
  // A folder from before manifests is replaced when the command's legacy rule accepts it.
  fs::create_directories(dir / "old");
  write_text(dir / "old" / "analysis.json", "{}");
  auto legacy = [](const fs::path& d) { return fs::exists(d / "analysis.json") && files_under(d).size() == 1; };
  write_folder_atomically(dir / "old", fill, "--out", "a biaslab analysis folder", legacy);
  EXPECT_FALSE(fs::exists(dir / "old" / "analysis.json"));
  EXPECT_TRUE(fs::exists(dir / "old" / "a.txt"));
}
