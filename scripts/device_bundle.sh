#!/usr/bin/env bash
# Collects the headers and libraries biaslab needs besides LibTorch (yaml-cpp, spdlog and
# fmt, CLI11, nlohmann-json, GoogleTest, Gloo's headers, zlib) from this machine's Debian
# packages into one folder, so that biaslab builds on a machine that has only a compiler,
# CMake, ninja and a LibTorch (the GPU machine: docs/gpu.md):
#   cmake -S . -B B -DBIASLAB_BUNDLE=$PWD/.device-bundle -DBIASLAB_WITH_OPENCV=OFF ...
# Usage: scripts/device_bundle.sh [--out DIR] [--data]   (default DIR: .device-bundle)
#   --data also copies Fashion-MNIST's four .gz files (dataset-fashion-mnist) to DIR/data.
# Prints the bundle's size. Installs the Debian packages it copies from when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.device-bundle data=0
while (($#)); do
  case $1 in
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --data) data=1; shift ;;
    *) echo "device_bundle: unknown argument '$1' (expected --out DIR, --data)" >&2; exit 2 ;;
  esac
done
packages=(libyaml-cpp-dev libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev
          libgloo-dev zlib1g-dev)
((data)) && packages+=(dataset-fashion-mnist)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "device_bundle: installing ${missing[*]}"
  apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
fi
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
libdir=/usr/lib/$multiarch
partial=$out.partial.$$
rm -rf "$partial"
mkdir -p "$partial/include" "$partial/lib"
for d in yaml-cpp spdlog fmt CLI nlohmann gtest gmock gloo; do
  [[ -d /usr/include/$d ]] || { echo "device_bundle: /usr/include/$d missing" >&2; exit 3; }
  cp -a "/usr/include/$d" "$partial/include/"
done
cp -a /usr/include/zlib.h /usr/include/zconf.h "$partial/include/"
# Shared libraries as their real file plus the links the linker and the loader look for.
copy_so() {
  local link=$libdir/$1 real soname
  real=$(readlink -f "$link")
  [[ -f $real ]] || { echo "device_bundle: $link missing" >&2; exit 3; }
  cp "$real" "$partial/lib/"
  soname=$(objdump -p "$real" | awk '$1 == "SONAME" {print $2}')
  [[ $soname && $soname != $(basename "$real") ]] && ln -sf "$(basename "$real")" "$partial/lib/$soname"
  ln -sf "$(basename "$real")" "$partial/lib/$1"
}
copy_so libyaml-cpp.so
copy_so libspdlog.so
copy_so libfmt.so
copy_so libz.so
cp "$libdir"/libgtest.a "$libdir"/libgtest_main.a "$libdir"/libgmock.a "$partial/lib/"
if ((data)); then
  mkdir -p "$partial/data/fashion-mnist"
  for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
    src=$(dpkg -L dataset-fashion-mnist | grep "/$f.gz$" | head -1)
    [[ -n $src ]] || { echo "device_bundle: $f.gz not in dataset-fashion-mnist" >&2; exit 3; }
    cp "$src" "$partial/data/fashion-mnist/"
  done
fi
{
  echo "# biaslab device bundle: made by scripts/device_bundle.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# from these Debian packages (name version):"
  for p in "${packages[@]}"; do dpkg-query -W -f '${Package} ${Version}\n' "$p"; done
} > "$partial/MANIFEST"
rm -rf "$out"
mv "$partial" "$out"
echo "device_bundle: $out holds $(du -sh --apparent-size "$out" | cut -f1) ($(find "$out" -type f | wc -l) files)"
