#!/usr/bin/env bash
# Installs what is missing, builds, and runs the default test suite (unit + end-to-end).
# Heavier checks carry the CTest label `slow` and run with: ctest --test-dir build -L slow
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
export BIASLAB_HOME=$PWD
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -LE slow "$@"
