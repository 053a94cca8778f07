#!/bin/sh
# README command 2: install what is missing, build, and run the whole test suite.
# GPU tests skip (exit 77) where there is no GPU.
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh
sh scripts/build.sh
cd build
ctest --output-on-failure -j "${JOBS:-$(nproc)}" "$@"
