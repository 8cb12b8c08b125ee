#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fresh machine to first result: install dependencies, build, run the quickstart pipeline.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DNNERGY_BUILD_TESTS=OFF
cmake --build build
build/bin/nnergy run configs/pipelines/quickstart.toml "$@"
