#!/usr/bin/env bash
# Installs what is missing, builds, and runs the default test suite (unit + end-to-end).
# Usage: scripts/test.sh [--torch debian|pip] [ctest arguments...]
#   --torch pip tests the build against PyPI's torch wheel (LibTorch 2.x) in build-pip/.
# Heavier checks carry the CTest label `slow` and run with: ctest --test-dir build -L slow
set -euo pipefail
cd "$(dirname "$0")/.."
torch=debian
if [[ ${1:-} == --torch ]]; then
  (($# >= 2)) || { echo "$(basename "$0"): --torch needs a value: debian or pip" >&2; exit 2; }
  torch=$2; shift 2
elif [[ ${1:-} == --torch=* ]]; then torch=${1#--torch=}; shift; fi
case $torch in
  debian) build_dir=${BUILD_DIR:-build} ;;
  pip) build_dir=${BUILD_DIR:-build-pip} ;;
  *) echo "test: --torch must be debian or pip, got '$torch'" >&2; exit 2 ;;
esac
scripts/setup.sh --torch "$torch"
BUILD_DIR=$build_dir scripts/build.sh --torch "$torch"
export BIASLAB_HOME=$PWD
ctest --test-dir "$build_dir" --output-on-failure -LE slow "$@"
