#!/usr/bin/env bash
# On the GPU machine (device tool): llama.cpp CUDA's llama-bench on GGUF files,
# the figures unicorn-bench's rows stand beside (same files, same lease):
# pp512 and tg128 with flash attention, every layer on the GPU, as
# docs/performance.md's llama.cpp columns.
#   tools/device_llamacpp_bench.sh BUNDLE FILE...
# Builds llama-bench first where $LLAMA_DIR has none (device_llamacpp_build.sh).
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BUNDLE FILE..." >&2
  exit 2
fi
bundle=$1; shift
dir=${LLAMA_DIR:-/tmp/llama}
"$(dirname "$0")/device_llamacpp_build.sh" "$bundle" llama-bench || exit 1
for f in "$@"; do
  echo "== $(basename "$f")"
  "$dir/build/bin/llama-bench" -m "$f" -ngl 99 -p 512 -n 128 -fa 1 -r ${REPS:-3} -o md 2>&1 |
    grep -E "^\| (gemma|model)|error|failed" | sed 's/^/  /'
done
