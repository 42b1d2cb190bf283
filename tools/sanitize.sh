#!/usr/bin/env bash
# The last step of .ci/run: the CPU-side tests under AddressSanitizer (with
# LeakSanitizer) and UndefinedBehaviorSanitizer, with the test-only device-fault
# hook compiled in. Builds only what those tests run,
# into BUILD_DIR (default build-asan), then runs them:
#   io_tests            GGUF, safetensors, config.json, files written whole (label loader)
#   convert_tests       unicorn-convert's GGUF output: vocabulary, chat template, metadata
#   tokenizer_*         the tokenizer against the npm oracle, and unicorn-tokenize
#   server_api_tests    request parsing and responses
#   grammar_tests       GBNF, JSON schemas and token masks (structured output)
#   cli_tests.shard*    the generator binaries as a user runs them (and unicorn-server
#                       picking its engine): end-to-end
#                       generation on lavapipe, bad files, write failures,
#                       signals, --check-tensors, injected device faults
#   binary_golden_tests  the tiny engine's logits through --logits-out
#   server_fault        a lost device under the server: 500s, then exit 1
#   fuzz_*              the libFuzzer targets (tests/fuzz, built by clang with
#                       ASan, UBSan and libFuzzer), a few seconds each from
#                       their seed corpora
# Any sanitizer report ends its process (-fno-sanitize-recover; LeakSanitizer
# at exit) and fails the test; nothing is suppressed. These builds keep the
# Vulkan drivers loaded to the end (UNICORN_KEEP_VULKAN_DRIVERS_LOADED,
# gpu/context.hpp): Debian 12's lavapipe (Mesa 22.3.6-1+deb12u2) holds 128
# bytes in its globals when the loader unloads it, which LeakSanitizer would
# report as a leak of a module already gone.
#   bash tools/sanitize.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}

# clang and its runtimes build the libFuzzer targets (tests/fuzz).
bash tools/install_packages.sh clang-14 libclang-rt-14-dev

# -g1: line tables, all a sanitizer report's stack needs; full debug info cost a
# fifth more compile time (unicorn-convert: 57.6 s against 45.6 s of CPU).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-g1 -O1" \
      -DUNICORN_SANITIZE=address,undefined -DUNICORN_FAULT_INJECTION=ON -DUNICORN_BUILD_FUZZERS=ON >/dev/null
# tests/fuzz/CMakeLists.txt names the fuzz targets (none where clang is missing).
fuzzers=$(sed -n 's/^UNICORN_FUZZ_TARGETS:INTERNAL=//p' "$build/CMakeCache.txt" | tr ';' '\n' | sed 's/^/fuzz_/')
# cli_tests' bench, placement-experiment and 1B cases need engines that take
# long to compile under the sanitizers, and the host app compiles the whole
# engine again (header-only, as a host app uses it: 190 s of CPU here); the
# release step (ctest in build/) runs them.
cmake --build "$build" --target io_tests convert_tests tokenizer_tests unicorn-tokenize server_api_tests grammar_tests cli_tests \
      unicorn-generate unicorn-chat unicorn-convert unicorn-tiny-q8_0 binary_golden_tests \
      unicorn-tiny-server unicorn-server unicorn-demo-from-gguf $fuzzers

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export GTEST_FILTER='-Cli.Bench*:Cli.PlacementExperiments:Cli.OfficialBinaryWithoutModel:Cli.HostAppWritesWhatTheGeneratorWrites'
ctest --test-dir "$build" --output-on-failure -j2 \
      -R '^(io_tests|convert_tests|tokenizer_oracle|tokenizer_tests|tokenizer_cli|server_api_tests|grammar_tests|cli_tests\.shard[0-9]+|binary_golden_tests|server_fault|fuzz_.*)$'
