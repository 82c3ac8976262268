#!/usr/bin/env bash
# Configures and builds biaslab (Release, Ninja, ccache when present).
# Usage: scripts/build.sh [--torch debian|pip] [cmake configure arguments...]
#   debian (default): Debian's LibTorch, into build/.
#   pip: the LibTorch inside the torch wheel scripts/setup.sh --torch pip installed, into
#        build-pip/ (found through torch.utils.cmake_prefix_path).
#   Any other LibTorch (e.g. an unpacked libtorch zip):
#        BUILD_DIR=build-zip scripts/build.sh -DCMAKE_PREFIX_PATH=/path/to/libtorch
set -euo pipefail
cd "$(dirname "$0")/.."
torch=debian
if [[ ${1:-} == --torch ]]; then
  (($# >= 2)) || { echo "$(basename "$0"): --torch needs a value: debian or pip" >&2; exit 2; }
  torch=$2; shift 2
elif [[ ${1:-} == --torch=* ]]; then torch=${1#--torch=}; shift; fi
args=()
case $torch in
  debian) BUILD_DIR=${BUILD_DIR:-build} ;;
  pip)
    BUILD_DIR=${BUILD_DIR:-build-pip}
    venv=${BIASLAB_TORCH_VENV:-$PWD/.venv-torch}
    [[ -x $venv/bin/python ]] || { echo "build: no torch venv at $venv; run scripts/setup.sh --torch pip" >&2; exit 2; }
    # The torch package folder holds lib/ and share/cmake/Torch; naming it (rather than
    # share/cmake) makes CMake find the wheel's libtorch.so before any system one.
    torch_dir=$("$venv/bin/python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
    args+=("-DCMAKE_PREFIX_PATH=$torch_dir" "-DBIASLAB_PYTHON=$venv/bin/python")
    ;;
  *) echo "build: --torch must be debian or pip, got '$torch'" >&2; exit 2 ;;
esac
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${args[@]}" "$@"
cmake --build "$BUILD_DIR" -j "$(nproc)"
