# Sourced by scripts/build.sh, test.sh, setup.sh, device_rehearsal.sh and device_check.sh: which
# LibTorch to build against.
#
# torch_arg "$@" reads a leading `--torch debian|pip` or `--torch=debian|pip` into $torch
# (default debian) and sets $torch_shift to the number of arguments it took, for the
# caller to `shift` off. A missing or unknown value exits with status 2.
torch_arg() {
  torch=debian
  torch_shift=0
  if [[ ${1:-} == --torch ]]; then
    (($# >= 2)) || { echo "$(basename "$0"): --torch needs a value: debian or pip" >&2; exit 2; }
    torch=$2
    torch_shift=2
  elif [[ ${1:-} == --torch=* ]]; then
    torch=${1#--torch=}
    torch_shift=1
  fi
  [[ $torch == debian || $torch == pip ]] ||
    { echo "$(basename "$0" .sh): --torch must be debian or pip, got '$torch'" >&2; exit 2; }
}

# The build folder of $torch, unless BUILD_DIR names another.
torch_build_dir() {
  case $torch in
    debian) echo "${BUILD_DIR:-build}" ;;
    pip) echo "${BUILD_DIR:-build-pip}" ;;
  esac
}

# torch_package_dir PYTHON: the torch package folder of that Python (it holds lib/ and
# share/cmake/Torch: the CMAKE_PREFIX_PATH for the LibTorch inside the wheel).
torch_package_dir() {
  "$1" -c 'import os, torch; print(os.path.dirname(torch.__file__))'
}
