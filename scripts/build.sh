#!/bin/sh
# Configures and builds mlactl in ./build (Release). Extra args go to cmake.
set -eu
cd "$(dirname "$0")/.."
JOBS="${JOBS:-$(nproc)}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$JOBS"
