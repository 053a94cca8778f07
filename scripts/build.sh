#!/bin/sh
# Configures and builds mlactl in ./build (Release). Extra args go to cmake.
# TARGETS (environment, optional): the targets to build, space-separated (default: all).
set -eu
cd "$(dirname "$0")/.."
JOBS="${JOBS:-$(nproc)}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
if [ -n "${TARGETS:-}" ]; then
  # shellcheck disable=SC2086  # TARGETS is a word list
  cmake --build build -j "$JOBS" --target $TARGETS
else
  cmake --build build -j "$JOBS"
fi
