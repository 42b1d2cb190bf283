#!/usr/bin/env bash
# The browser tests (ctest label browser: the chat page at GET / in headless
# chromium, tests/server/chat_page.test.cjs). Chromium is large, so
# tools/setup.sh leaves it out and the README's test command runs without
# these; this installs it (Debian's package), configures build/ again so that
# CMake finds it, builds what the tests need and runs them. CI runs it after
# the README's test command (.ci/run).
#   bash tools/browser_test.sh
#   UNICORN_SCREENSHOT=$PWD/shot.png bash tools/browser_test.sh   # also a screenshot with the demo model
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_packages.sh chromium nodejs npm
# puppeteer-core from its own manifest (reproducible from its lock file), so
# that the README's test command does not install it.
mkdir -p build/npm-browser
cp tests/server/browser/package.json tests/server/browser/package-lock.json build/npm-browser/
(cd build/npm-browser && npm ci --ignore-scripts --no-audit --no-fund >/dev/null)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
targets=(unicorn-tiny-server unicorn_gemma3_tokenizer)
[ -z "${UNICORN_SCREENSHOT:-}" ] || targets+=(unicorn-server)
cmake --build build --target "${targets[@]}"
ctest --test-dir build -L browser --output-on-failure
