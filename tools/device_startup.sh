#!/usr/bin/env bash
# On the GPU machine (device tool): start-up costs of unicorn-bench's engines —
# engine creation with an empty and then a filled on-disk pipeline cache (the
# driver's own shader cache off, so the difference is ours), weight loading
# from the page cache (seconds, GB/s), and the first token after loading (cold)
# against the same prompt later (warm).
#   tools/device_startup.sh BIN_DIR OUT_DIR model:type[:embedding] ...
# Binaries and the Vulkan loader packages are carried as for device_bench.sh.
set -uo pipefail
bin=$1 out=$2
shift 2
source "$(dirname "$0")/device_env.sh"
for spec in "$@"; do
  IFS=: read -r model type embedding <<<"$spec"
  file="$models/$model-$type${embedding:+-emb$embedding}.gguf"
  if [ ! -f "$file" ]; then
    "$bin/unicorn-convert" --random "$model" --type "$type" ${embedding:+--embedding "$embedding"} --out "$file" >/dev/null || exit 1
  fi
  cat "$file" >/dev/null  # in the page cache: loading measures us, not the disk
  name=$(basename "$file" .gguf)
  cache=$(mktemp -d)
  for start in cold warm; do
    __GL_SHADER_DISK_CACHE=0 UNICORN_PIPELINE_CACHE="$cache" \
      "$bin/unicorn-bench" --model "$file" -p 512 -n 16 -r 3 --json >"$out/$name-$start.json" 2>"$out/$name-$start.err"
  done
  python3 - "$spec" "$out/$name-cold.json" "$out/$name-warm.json" <<'PY'
import json, sys
spec, runs = sys.argv[1], sys.argv[2:]
for path in runs:
    try:
        j = json.load(open(path))
    except Exception as e:
        print(f"{spec}: no JSON in {path}: {e}"); continue
    s, c = j["startup"], j["startup"]["pipeline_cache"]
    cache = f"read {c['loaded_bytes'] / 1e6:.2f} MB" if c["loaded_bytes"] else f"empty, wrote {c['saved_bytes'] / 1e6:.2f} MB"
    print(f"{spec} ({path.rsplit('-', 1)[1][:-5]} pipeline cache: {cache}): engine {s['engine_seconds']:.3f} s, "
          f"load {j['load_seconds']:.2f} s = {j['load_gbps']:.2f} GB/s, first token (pp512) "
          f"{s['first_token_ms_cold']:.1f} ms cold, {s['first_token_ms_warm']:.1f} ms warm; "
          f"pp512 {j['pp']['tokens_per_s']:.0f} t/s, tg16 {j['tg']['tokens_per_s']:.1f} t/s")
PY
done
