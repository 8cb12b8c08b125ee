#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages nnergy builds and tests with. Idempotent.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang libc++-dev libc++abi-dev
  libboost-dev libtomlplusplus-dev libspdlog-dev libfmt-dev librange-v3-dev
  catch2 nlohmann-json3-dev libcli11-dev libonnx-dev libprotobuf-dev libsimdjson-dev python3
  python3-jsonschema chromium fonts-dejavu-core zsh
  # The microbenchmark harness (docs/microbench.md): PyTorch, with OpenBLAS for its GEMMs.
  python3-torch libopenblas0-openmp
  # The TorchScript frontend (docs/torchscript.md): libtorch's headers and CMake files; its tests
  # trace torchvision models.
  libtorch-dev python3-torchvision
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
