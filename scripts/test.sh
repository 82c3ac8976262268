#!/usr/bin/env bash
# Installs what is missing, builds, and runs the default test suite (unit + end-to-end).
# Usage: scripts/test.sh [--torch debian|pip] [ctest arguments...]
#   --torch pip tests the build against PyPI's torch wheel (LibTorch 2.x) in build-pip/.
# Heavier checks carry the CTest label `slow` and run with: ctest --test-dir build -L slow
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
ctest --test-dir "$build_dir" --output-on-failure -LE slow "$@"
