#!/usr/bin/env bash
# On the GPU machine (device tool): the suites that need a Vulkan device —
# kernel_tests (every shader against its CPU reference), model_tests (the tiny
# model against transformers' golden logits, batch invariance, bit-exact
# prompt batching) and server_scheduler_tests — with binaries built on the
# development machine and carried (.carry/bin), and the loader in .gl.
#   tools/device_golden.sh BIN_DIR OUT_DIR [gtest filter for kernel_tests]
# (a suite not in BIN_DIR is skipped; the whole kernel suite takes over 10
# minutes on the H100, most of it compiling Kernel/LinearCoop's pipelines, so
# a device call runs it in parts by filter).
# Prints each suite's summary and the golden lines (max logit error per
# scheme and pass); full logs in OUT_DIR.
set -uo pipefail
bin=$1 out=$2
filter=${3:-*}
source "$(dirname "$0")/device_env.sh"
export UNICORN_FIXTURES=$PWD/tests/model/fixtures UNICORN_CONVERT=$bin/unicorn-convert \
       UNICORN_TINY_TOKENIZER=$PWD/tests/server/fixtures/tiny_tokenizer.json
status=0
for suite in kernel_tests model_tests server_scheduler_tests; do
  [ -x "$bin/$suite" ] || { echo "== $suite: not in $bin"; continue; }
  args=()
  [ "$suite" = kernel_tests ] && args=(--gtest_filter="$filter")
  "$bin/$suite" "${args[@]}" > "$out/$suite.log" 2>&1
  rc=$?
  [ $rc = 0 ] || status=1
  echo "== $suite (exit $rc): $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]' "$out/$suite.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \] .*\.' "$out/$suite.log" | head -20
  grep -E '^\[ (golden|batch|prefill|attention_coop) ' "$out/$suite.log" | head -40
done
exit $status
