#!/bin/sh
# README command 1: install what is missing, build mlactl (and only mlactl: the tests are
# scripts/test.sh's), and run the main job on the CPU: every fixture under fixtures/
# through `mlactl check`. Extra arguments go to cmake, e.g. -DMLACTL_GPU=none.
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh
if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null 2>&1; then
  case " $* " in
    *" -DMLACTL_GPU=none "*) ;;
    *) echo "mlactl: building the CUDA backend too (nvcc found): about 3 minutes on 2 cores, under 2 without it;" \
            "to skip it: sh scripts/quickstart.sh -DMLACTL_GPU=none" >&2 ;;
  esac
fi
TARGETS=mlactl sh scripts/build.sh "$@"
exec ./build/mlactl check fixtures/
