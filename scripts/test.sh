#!/usr/bin/env bash
# Installs what is missing, builds, and runs the default test suite (unit + end-to-end).
# Usage: scripts/test.sh [--torch debian|pip] [ctest arguments...]
#   --torch pip tests the build against PyPI's torch wheel (LibTorch 2.x) in build-pip/.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/torch_arg.sh
torch_arg "$@"
shift "$torch_shift"
build_dir=$(torch_build_dir)
scripts/setup.sh --torch "$torch"
# Every target (the unit tests too), whatever BUILD_TARGETS the caller's environment has.
BUILD_DIR=$build_dir BUILD_TARGETS= scripts/build.sh --torch "$torch"
export BIASLAB_HOME=$PWD
status=0
ctest --test-dir "$build_dir" --output-on-failure "$@" || status=$?
# ctest names the skipped tests; what each skipped, and why, is in its output.
log=$build_dir/Testing/Temporary/LastTest.log
if [[ -f $log ]] && grep -q "^SKIPPED: " "$log"; then
  echo "test.sh: skipped parts of tests (docs/tests.md, \"Skips show\"):"
  grep "^SKIPPED: " "$log" | sort | uniq -c
fi
exit "$status"
