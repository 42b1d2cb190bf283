#!/usr/bin/env bash
# The scale-out test (ctest label scaleout: three unicorn-tiny-server
# processes behind HAProxy on loopback, tests/server/scaleout.test.cjs).
# HAProxy is not something the build needs, so tools/setup.sh leaves it out
# and the README's test command runs without it; this installs it (Debian's
# package), configures build/ again so that CMake finds it, builds what the
# test needs and runs it. CI runs it after the browser tests (.ci/run).
#   bash tools/scaleout_test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_packages.sh haproxy nodejs npm
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target unicorn-tiny-server unicorn_gemma3_tokenizer
ctest --test-dir build -L scaleout --output-on-failure
