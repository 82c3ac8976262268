#!/usr/bin/env bash
# Configures and builds biaslab into build/ (Release, Ninja, ccache when present).
# Extra arguments go to cmake's configure step, e.g. -DCMAKE_PREFIX_PATH=/path/to/libtorch.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$BUILD_DIR" -j "$(nproc)"
