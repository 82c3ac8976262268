#!/usr/bin/env bash
# Installs every Debian package biaslab needs (idempotent: only what is missing).
# Usage: scripts/setup.sh            (run as root, or with sudo available)
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libtorch-dev libopenblas0-pthread libgloo-dev
  libopencv-dev libyaml-cpp-dev libspdlog-dev libcli11-dev libgtest-dev
  nlohmann-json3-dev zlib1g-dev
  dataset-fashion-mnist
  python3 python3-torch python3-torchvision
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
