#!/usr/bin/env bash
# On the GPU machine (device tool): unpack the carried Vulkan loader, write
# random-weight GGUF files in exact Gemma 3 shapes, run unicorn-bench on each.
#   tools/device_bench.sh BIN_DIR OUT_DIR model:type[:embedding] ...
# e.g. tools/device_bench.sh .carry/bin $OUT gemma3-1b:Q4_0 gemma3-27b:Q4_0:F16
# REPS (default 5) repetitions; PROFILE=1 adds --profile; BATCH="8 32" also
# runs --batch N for each N (streams start after a 128-token prompt; Q4_0 and
# Q8_0 files), printing aggregate tokens/s.
# Binaries are built on the development machine and carried (.carry/bin),
# with the loader packages in .gl (device README's recipe).
set -uo pipefail
bin=$1 out=$2
shift 2
source "$(dirname "$0")/device_env.sh"
nvidia-smi --query-gpu=name,memory.total,clocks.max.memory --format=csv | tee "$out/gpu.txt"
for spec in "$@"; do
  IFS=: read -r model type embedding <<<"$spec"
  file="$models/$model-$type${embedding:+-emb$embedding}.gguf"
  if [ ! -f "$file" ]; then
    start=$(date +%s.%N)
    "$bin/unicorn-convert" --random "$model" --type "$type" ${embedding:+--embedding "$embedding"} --out "$file" >/dev/null || exit 1
    echo "$spec: wrote $(du -h "$file" | cut -f1) in $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"
  fi
  name=$(basename "$file" .gguf)
  "$bin/unicorn-bench" --model "$file" -p 512 -n 128 -r ${REPS:-5} --json ${PROFILE:+--profile} > "$out/$name.json" 2> "$out/$name.err"
  echo "== $spec (exit $?)"
  python3 - "$out/$name.json" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print("  no JSON:", e); sys.exit(0)
print(f"  {j['model']} {j['scheme']['weights']}/{j['scheme']['embedding']} on {j['device']}: "
      f"pp{j['pp']['tokens']} {j['pp']['tokens_per_s']:.0f} t/s, tg{j['tg']['tokens']} {j['tg']['tokens_per_s']:.1f} t/s "
      f"= {j['roofline_percent']:.1f}% of roofline {j['roofline_tokens_per_s']:.0f} "
      f"(bw {j['read_bandwidth_gbps']:.0f} GB/s), load {j['load_seconds']:.2f} s ({j['load_gbps']:.2f} GB/s)")
for p, ks in j.get('profile', {}).items():
    print("  profile", p, ", ".join(f"{k['kernel']} {k['ms']:.3f}ms" for k in ks[:6]))
PY
  for streams in ${BATCH:-}; do
    [ -n "$embedding" ] && continue  # --batch engines: all-Q4_0 / all-Q8_0 files
    "$bin/unicorn-bench" --model "$file" --batch "$streams" -p 128 -n 128 -r ${REPS:-5} --json \
      ${PROFILE:+--profile} > "$out/$name-batch$streams.json" 2> "$out/$name-batch$streams.err"
    python3 - "$out/$name-batch$streams.json" "$spec" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print("  batch: no JSON:", e); sys.exit(0)
b = j['batch']
print(f"  {sys.argv[2]} batch {b['streams']}: {b['tokens_per_s']:.1f} t/s aggregate "
      f"({b['min']:.1f}..{b['max']:.1f}), {b['per_stream_tokens_per_s']:.1f} per stream, "
      f"{b['roofline_percent']:.1f}% of {b['roofline_tokens_per_s']:.0f} [{b['linear']}]")
for k in j.get('profile', {}).get('batch', [])[:5]:
    print(f"    {k['kernel']} {k['ms']:.3f} ms ({k['dispatches']})")
PY
  done
done
