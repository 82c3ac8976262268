# The commit recorded in meta.json, bench --json and exported archives is the one the
# binary was built from: scripts/git_info.cmake writes it at build time, so a commit
# followed by an incremental rebuild (no new cmake configure) records the new commit, and
# changed tracked files are recorded as a dirty tree. Checked on a small CMake project that
# wires the script exactly as CMakeLists.txt does, in a git repository of its own; then on
# the binary under test, against the checkout it was built from.
source "$(dirname "$0")/lib.sh" "$@"
command -v git > /dev/null || fail "git is needed (scripts/setup.sh installs it)"
cd "$WORK"
mkdir -p repo/scripts repo/src/core
cp "$SRC/scripts/git_info.cmake" repo/scripts/
cd repo
cat > CMakeLists.txt <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(provenance CXX)
include(scripts/git_info.cmake)
set(GIT_INFO ${CMAKE_CURRENT_BINARY_DIR}/generated/core/git_info.cpp)
biaslab_git_info(git_info ${GIT_INFO})
add_executable(show main.cpp ${GIT_INFO})
add_dependencies(show git_info)
target_include_directories(show PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
CMAKE
cat > src/core/build_info.h <<'CPP'
namespace biaslab::build {
extern const char* const kGitCommit;
extern const bool kGitDirty;
}
CPP
cat > main.cpp <<'CPP'
#include <cstdio>
#include "core/build_info.h"
int main() { std::printf("%s %s\n", biaslab::build::kGitCommit, biaslab::build::kGitDirty ? "dirty" : "clean"); }
CPP
echo "notes" > NOTES
git init -q . && git config user.email test@biaslab && git config user.name test
git add -A && git commit -qm one
first=$(git rev-parse --short=12 HEAD)
cmake -S . -B build -G Ninja > configure.log 2>&1 || { cat configure.log; fail "configure"; }
build() { cmake --build build > build.log 2>&1 || { cat build.log; fail "build"; }; }
build
[[ $(build/show) == "$first clean" ]] || fail "first build records '$(build/show)', expected '$first clean'"
echo "more" >> NOTES
build
[[ $(build/show) == "$first dirty" ]] || fail "a changed tracked file records '$(build/show)', expected '$first dirty'"
git commit -qam two
second=$(git rev-parse --short=12 HEAD)
build
grep -q "Re-running CMake" build.log && fail "the rebuild configured again: it would not show an incremental rebuild"
[[ $(build/show) == "$second clean" ]] || fail "the rebuild after a commit records '$(build/show)', expected '$second clean'"
# An unchanged commit rewrites nothing, so nothing is recompiled.
touch -d '1 minute ago' build/generated/core/git_info.cpp
stamp=$(stat -c %Y build/generated/core/git_info.cpp)
build
[[ $(stat -c %Y build/generated/core/git_info.cpp) == "$stamp" ]] || fail "an unchanged commit rewrote git_info.cpp"
echo "ok: the commit and dirty state are generated at build time"

# The binary under test names the checkout's commit (scripts/test.sh builds before testing).
if head=$(git -C "$SRC" rev-parse --short=12 HEAD 2> /dev/null); then
  version=$("$BIASLAB" --version)
  [[ $version == *"($head"* ]] || fail "biaslab --version says '$version', the checkout is at $head: rebuild"
  echo "ok: biaslab --version names the checkout's commit $head"
fi
echo "e2e provenance: all checks passed"
