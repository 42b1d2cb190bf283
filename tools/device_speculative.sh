#!/usr/bin/env bash
# On the GPU machine (device tool): speculative decoding's costs and speed
# (issue 55) with random weights in exact Gemma 3 shapes: the 270M drafting
# for the 4B and the 27B. For each pair, unicorn-bench --draft prints the
# verify pass's cost for k = 1..16 beside a decode step, the speed-up those
# costs give at acceptance 0.5, 0.7 and 0.9, and rounds of k = 8 guesses
# with the acceptance forced (random weights accept nothing): ACCEPTS="0.7 0.5
# 0.9" by default.
#   tools/device_speculative.sh BIN_DIR OUT_DIR [TYPE]    (TYPE: Q4_0, the default)
# Binaries are built on the development machine and carried, with the loader
# packages in .gl (device README's recipe), as tools/device_bench.sh does.
set -uo pipefail
bin=$1 out=$2 type=${3:-Q4_0}
source "$(dirname "$0")/device_env.sh"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt"
for model in gemma3-270m gemma3-27b gemma3-4b; do
  file="$models/$model-$type.gguf"
  [ -f "$file" ] && continue
  start=$(date +%s)
  "$bin/unicorn-convert" --random "$model" --type "$type" --out "$file" >/dev/null || exit 1
  echo "$model $type: wrote $(du -h "$file" | cut -f1) in $(( $(date +%s) - start )) s"
done
draft="$models/gemma3-270m-$type.gguf"
for target in gemma3-27b gemma3-4b; do
  for accept in ${ACCEPTS:-0.7 0.5 0.9}; do
    name="$target-accept$accept"
    "$bin/unicorn-bench" --model "$models/$target-$type.gguf" --draft "$draft" --draft-max 8 --draft-accept "$accept" \
      -p 128 -n 128 -r 3 --json > "$out/$name.json" 2> "$out/$name.err"
    echo "== $target drafted by gemma3-270m, $type, acceptance forced to $accept (exit $?)"
    python3 - "$out/$name.json" "$accept" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print("  no JSON:", e); sys.exit(0)
s = j["speculative"]
if sys.argv[2] == "0.7":
    print(f"  {j['device']}: target step {s['target_step_ms']:.3f} ms, draft step {s['draft_step_ms']:.3f} ms")
    print("  k  verify_ms  x_step  speedup@0.5  @0.7  @0.9")
    for r in s["verify"]:
        print(f"  {r['k']:2d} {r['verify_ms']:9.3f} {r['times_one_step']:7.2f} {r['speedup_at_0.5']:11.2f} "
              f"{r['speedup_at_0.7']:5.2f} {r['speedup_at_0.9']:5.2f}")
print(f"  rounds of {s['draft_max']}: {100*s['accepted_fraction']:.1f}% kept, {s['tokens_per_verify_pass']:.2f} tokens/pass, "
      f"{s['speculative_tokens_per_s']:.1f} t/s vs {s['target_alone_tokens_per_s']:.1f} alone: x{s['speedup']:.2f}")
PY
  done
done
