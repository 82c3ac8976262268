#!/usr/bin/env bash
# Rehearses the GPU machine's build on this CPU machine: biaslab built from only a
# compiler, CMake, ninja, the PyPI torch wheel (.venv-torch) and the bundle of
# scripts/device_bundle.sh, with OpenCV off, then its unit tests run. Debian's packages
# for the libraries biaslab uses (yaml-cpp, spdlog, fmt, CLI11, nlohmann-json, GoogleTest,
# Gloo, zlib's headers, OpenCV, Debian's own LibTorch) stay installed but are hidden: in a
# private mount namespace each of their header folders and CMake packages is covered by
# an empty tmpfs and each of their other files by /dev/null, so a build that reached for
# one would fail. Needs root (unshare -m). Not part of CI (docs/gpu.md).
# Usage: scripts/device_rehearsal.sh [ctest arguments...]   (default: ctest -L unit)
#   BUILD_DIR (default build-rehearsal); the bundle is made in .device-bundle.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/torch_arg.sh
build_dir=${BUILD_DIR:-build-rehearsal}
venv=${BIASLAB_TORCH_VENV:-$PWD/.venv-torch}
hidden_packages() {
  dpkg-query -W -f '${Package}\n' | grep -E '^(libyaml-cpp|libspdlog|libfmt|libcli11|nlohmann-json|libgtest|libgmock|googletest|libgloo|zlib1g-dev|libopencv|libtorch|libc10)' || true
}
if [[ ${1:-} != --inside ]]; then
  [[ -x $venv/bin/python ]] || scripts/setup.sh --torch pip
  [[ -f .device-bundle/MANIFEST ]] || scripts/device_bundle.sh
  (($(id -u) == 0)) || { echo "device_rehearsal: needs root (a private mount namespace)" >&2; exit 2; }
  exec unshare -m --propagation private "$0" --inside "$@"
fi
shift
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
declare -A dirs=()
files=()
while read -r p; do
  [[ -e $p || -L $p ]] || continue
  [[ -d $p && ! -L $p ]] && continue
  case $p in
    /usr/include/$multiarch/*) files+=("$p") ;;
    /usr/include/*/*) top=${p#/usr/include/}; dirs[/usr/include/${top%%/*}]=1 ;;
    /usr/lib/$multiarch/cmake/*/*) top=${p#/usr/lib/$multiarch/cmake/}; dirs[/usr/lib/$multiarch/cmake/${top%%/*}]=1 ;;
    /usr/share/cmake/*/*) top=${p#/usr/share/cmake/}; dirs[/usr/share/cmake/${top%%/*}]=1 ;;
    /usr/lib/cmake/*/*) top=${p#/usr/lib/cmake/}; dirs[/usr/lib/cmake/${top%%/*}]=1 ;;
    /usr/share/doc/*|/usr/share/lintian/*|/usr/share/man/*) ;;
    *) files+=("$p") ;;
  esac
done < <(hidden_packages | xargs dpkg -L 2>/dev/null | sort -u)
for d in "${!dirs[@]}"; do mount -t tmpfs -o size=1m,mode=755 biaslab-hidden "$d"; done
# A link is hidden through its target only where the target is theirs too (zlib1g-dev's
# libz.so points to the zlib runtime every program needs: that stays).
declare -A theirs=()
for f in "${files[@]}"; do [[ -L $f ]] || theirs[$(readlink -f "$f")]=1; done
hidden_files=0
for real in "${!theirs[@]}"; do
  [[ -f $real ]] || continue
  mount --bind /dev/null "$real" 2>/dev/null && hidden_files=$((hidden_files + 1))
done
echo "device_rehearsal: hid ${#dirs[@]} folders and $hidden_files files of $(hidden_packages | wc -l) Debian packages"
# Proof that the hiding holds: none of these may be found.
for probe in /usr/include/yaml-cpp/yaml.h /usr/include/spdlog/spdlog.h /usr/include/opencv4/opencv2/core.hpp \
             /usr/include/gtest/gtest.h /usr/include/torch/script.h; do
  [[ -s $probe ]] && { echo "device_rehearsal: $probe is still visible" >&2; exit 3; }
done
torch_dir=$(torch_package_dir "$venv/bin/python")
export BIASLAB_HOME=$PWD
run() { env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME" BIASLAB_HOME="$BIASLAB_HOME" "$@"; }
start=$SECONDS
run cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_dir" \
  -DBIASLAB_PYTHON="$venv/bin/python" -DBIASLAB_BUNDLE="$PWD/.device-bundle" -DBIASLAB_WITH_OPENCV=OFF
run cmake --build "$build_dir" -j "$(nproc)"
echo "device_rehearsal: build took $((SECONDS - start)) s"
(($#)) || set -- -L unit
run ctest --test-dir "$build_dir" --output-on-failure "$@"
