#!/usr/bin/env bash
# On the GPU machine (device tool): unpack the carried Vulkan loader, write
# random-weight GGUF files in exact Gemma 3 shapes, run unicorn-bench on each.
#   tools/device_bench.sh BIN_DIR OUT_DIR model:type[:embedding] ...
# e.g. tools/device_bench.sh .carry/bin $OUT gemma3-1b:Q4_0 gemma3-27b:Q4_0:F16
# Binaries are built on the development machine and carried (.carry/bin),
# with the loader packages in .gl (device README's recipe).
set -uo pipefail
bin=$1 out=$2
shift 2
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
if ! ls /usr/share/vulkan/icd.d/*.json >/dev/null 2>&1 && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
models=/tmp/unicorn-models
mkdir -p "$models" "$out"
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
done
