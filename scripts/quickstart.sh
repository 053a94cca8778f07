#!/bin/sh
# README command 1: install what is missing, build, and run the main job on the CPU:
# every fixture under fixtures/ through `mlactl check`.
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh
sh scripts/build.sh
exec ./build/mlactl check fixtures/
