#!/usr/bin/env bash
# Installs what biaslab needs (idempotent: only what is missing).
# Usage: scripts/setup.sh [--torch debian|pip]      (run as root, or with sudo available)
#   debian (default): Debian's libtorch-dev (LibTorch 1.13, CPU).
#   pip: additionally PyPI's torch wheel (LibTorch 2.x, a CUDA build that also runs on the
#        CPU) and the matching torchvision, in a virtual environment at .venv-torch/ (or
#        $BIASLAB_TORCH_VENV); scripts/build.sh --torch pip builds against it.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/lib/torch_arg.sh
torch_arg "$@"
shift "$torch_shift"
(($# == 0)) || { echo "setup: unknown argument '$1' (expected --torch debian|pip)" >&2; exit 2; }

# The PyPI versions biaslab is tested with (torch's CUDA 13 build; runs on CPU-only machines).
TORCH_PIP_VERSION=${TORCH_PIP_VERSION:-2.15.0}
TORCHVISION_PIP_VERSION=${TORCHVISION_PIP_VERSION:-0.29.2}
# The Python client the TensorBoard test reads event files back with (.venv-tensorboard).
TENSORBOARD_PIP_VERSION=${TENSORBOARD_PIP_VERSION:-2.21.0}

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libtorch-dev libopenblas0-pthread libopenblas0-openmp libgloo-dev
  libopencv-dev libyaml-cpp-dev libspdlog-dev libcli11-dev libgtest-dev
  nlohmann-json3-dev zlib1g-dev libprotobuf-dev protobuf-compiler
  dataset-fashion-mnist
  python3 python3-torch python3-torchvision python3-venv python3-pip
  python3-dev  # Python.h: torch.compile's Inductor builds C++ (scripts/bench_vs_pytorch.py --compile)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages already installed"
else
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [[ $torch == pip ]]; then
  venv=${BIASLAB_TORCH_VENV:-$PWD/.venv-torch}
  want="$TORCH_PIP_VERSION $TORCHVISION_PIP_VERSION"
  have=$("$venv/bin/python" -c 'import torch, torchvision; print(torch.__version__.split("+")[0], torchvision.__version__.split("+")[0])' 2>/dev/null || true)
  if [[ $have == "$want" ]]; then
    echo "setup: torch $TORCH_PIP_VERSION and torchvision $TORCHVISION_PIP_VERSION already in $venv"
  else
    echo "setup: installing torch==$TORCH_PIP_VERSION torchvision==$TORCHVISION_PIP_VERSION from PyPI into $venv"
    start=$SECONDS
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
      "torch==$TORCH_PIP_VERSION" "torchvision==$TORCHVISION_PIP_VERSION"
    echo "setup: pip install took $((SECONDS - start)) s"
  fi
fi
# TensorBoard event files are written by the build against Debian's LibTorch (the pip
# wheel's bundled protobuf rules them out there); its test reads them back with the
# tensorboard package from PyPI. A failed install only skips that reading.
if [[ $torch == debian ]]; then
  tbvenv=${BIASLAB_TENSORBOARD_VENV:-$PWD/.venv-tensorboard}
  have=$("$tbvenv/bin/python" -c 'import tensorboard; print(tensorboard.__version__)' 2>/dev/null || true)
  if [[ $have == "$TENSORBOARD_PIP_VERSION" ]]; then
    echo "setup: tensorboard $TENSORBOARD_PIP_VERSION already in $tbvenv"
  else
    echo "setup: installing tensorboard==$TENSORBOARD_PIP_VERSION from PyPI into $tbvenv"
    /usr/bin/python3 -m venv "$tbvenv" &&
      "$tbvenv/bin/pip" install --quiet --disable-pip-version-check "tensorboard==$TENSORBOARD_PIP_VERSION" ||
      echo "setup: WARNING: tensorboard could not be installed; e2e_tensorboard will not read events back" >&2
  fi
fi
echo "setup: done"
