#!/usr/bin/env bash
# On the GPU machine (device tool): the bits the server's batch invariance
# rests on, at the real models' shapes — unicorn-bench --batch 32
# --invariance on random-weight Q4_0 files (prompts alone, twice and packed;
# batched steps run twice; a stream alone and among 32; steps of at most 16
# and of all 32). The tiny models cannot show a race between a step's tiles:
# theirs are too few and too short (notes/server.md, "Found, then fixed").
#   tools/device_invariance.sh BIN_DIR OUT_DIR [model ...]   (default: gemma3-1b gemma3-4b gemma3-27b)
# Exit 1 if any line says DIFFER.
set -uo pipefail
bin=$1 out=$2
shift 2
source "$(dirname "$0")/device_env.sh"
names=("$@")
((${#names[@]})) || names=(gemma3-1b gemma3-4b gemma3-27b)
status=0
for model in "${names[@]}"; do
  file="$models/$model-Q4_0.gguf"
  [ -f "$file" ] || "$bin/unicorn-convert" --random "$model" --type Q4_0 --out "$file" >/dev/null || exit 1
  echo "== $model"
  "$bin/unicorn-bench" --model "$file" --batch 32 --invariance -p 128 -n 4 | tee "$out/$model-invariance.txt" || status=1
done
exit $status
