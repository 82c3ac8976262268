#!/usr/bin/env bash
# Configures and builds biaslab (Release, Ninja, ccache when present).
# Usage: scripts/build.sh [--torch debian|pip] [cmake configure arguments...]
#   debian (default): Debian's LibTorch, into build/.
#   pip: the LibTorch inside the torch wheel scripts/setup.sh --torch pip installed, into
#        build-pip/ (found through torch.utils.cmake_prefix_path).
#   Any other LibTorch (e.g. an unpacked libtorch zip):
#        BUILD_DIR=build-zip scripts/build.sh -DCMAKE_PREFIX_PATH=/path/to/libtorch
# BUILD_TARGETS="biaslab ..." builds only those targets (default: all, the tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/torch_arg.sh
torch_arg "$@"
shift "$torch_shift"
BUILD_DIR=$(torch_build_dir)
args=()
if [[ $torch == pip ]]; then
  venv=${BIASLAB_TORCH_VENV:-$PWD/.venv-torch}
  [[ -x $venv/bin/python ]] || { echo "build: no torch venv at $venv; run scripts/setup.sh --torch pip" >&2; exit 2; }
  # The torch package folder holds lib/ and share/cmake/Torch; naming it (rather than
  # share/cmake) makes CMake find the wheel's libtorch.so before any system one.
  torch_dir=$(torch_package_dir "$venv/bin/python")
  args+=("-DCMAKE_PREFIX_PATH=$torch_dir" "-DBIASLAB_PYTHON=$venv/bin/python")
fi
targets=()
if [[ -n ${BUILD_TARGETS:-} ]]; then
  read -ra names <<< "$BUILD_TARGETS"
  targets=(--target "${names[@]}")
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${args[@]}" "$@"
cmake --build "$BUILD_DIR" -j "$(nproc)" "${targets[@]}"
