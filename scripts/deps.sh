#!/bin/sh
# Installs what mlactl needs from Debian 12 packages, only what is missing.
# nvcc is not a Debian package: the build uses it when present and says so when not.
set -eu
PKGS="cmake ninja-build g++ make libcli11-dev nlohmann-json3-dev libeigen3-dev catch2 hipcc clang libclang-rt-14-dev clang-22 lld-22 git python3 python3-numpy python3-jsonschema librsvg2-bin"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "mlactl: installing Debian packages:$missing" >&2
  if [ "$(id -u)" -ne 0 ]; then echo "mlactl: run as root (or install:$missing)" >&2; exit 1; fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "mlactl: nvcc found: the CUDA backend builds for sm_90a (H100/H200; set CMAKE_CUDA_ARCHITECTURES for others) unless -DMLACTL_GPU=none" >&2
else
  echo "mlactl: nvcc not found: building without the CUDA backend (CPU executor only)" >&2
fi
