#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install dependencies, build warning-free (-Werror) and run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build_dir=${NNERGY_TEST_BUILD_DIR:-build-test}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNNERGY_WERROR=ON "$@"
cmake --build "$build_dir"
# The tests keep their plugin catalog and parsed configuration files in the build tree, not in
# the user's ~/.cache/nnergy: their outcome never depends on what other builds left there.
XDG_CACHE_HOME="$(cd "$build_dir" && pwd)/test-cache" \
  ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)"
