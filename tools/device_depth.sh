#!/usr/bin/env bash
# On the GPU machine (device tool): pp and tg at depth, unicorn-bench -d beside
# llama.cpp CUDA's llama-bench -d on the same random-weight files (issue 53's
# rows; docs/performance.md): pp512 and tg128 after each depth of context.
#   tools/device_depth.sh BIN_DIR OUT_DIR BUNDLE model:type ...
# BIN_DIR: unicorn-convert and unicorn-bench (.xz-compressed, as carried).
# DEPTHS: the depths (default "0 4096 16384 32000"; unicorn-bench's one-stream
# engines hold 32,768 positions, -d + 512 + 128 of them). PHASES as
# device_file_types.sh's ("files unicorn llama").
set -uo pipefail
B=$1 out=$2 bundle=$3; shift 3
here=$(cd "$(dirname "$0")" && pwd)
phases=" ${PHASES:-files unicorn llama} "
depths=${DEPTHS:-0 4096 16384 32000}
source "$here/device_env.sh"
(cd "$B" && for f in *.xz; do [ -e "$f" ] && xz -df "$f"; done; chmod +x ./*)
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
files=()
for spec in "$@"; do
  IFS=: read -r m t <<<"$spec"
  f="$models/$m-$t.gguf"
  files+=("$f")
  if [[ $phases == *" files "* && ! -f $f ]]; then
    "$B/unicorn-convert" --random "$m" --type "$t" --out "$f" > /dev/null || echo "convert $spec failed"
  fi
done
if [[ $phases == *" files "* && ! -x ${LLAMA_DIR:-/tmp/llama}/build/bin/llama-bench ]]; then
  setsid nohup "$here/device_llamacpp_build.sh" "$bundle" llama-bench > /tmp/llama_build.log 2>&1 < /dev/null &
fi
if [[ $phases == *" unicorn "* ]]; then
  for f in "${files[@]}"; do
    for d in $depths; do
      taskset -c 0,1 "$B/unicorn-bench" --model "$f" -d "$d" -p 512 -n 128 -r ${REPS:-3} --json > /tmp/r.json 2>> "$out/err.txt"
      python3 - "$f" "$d" <<'PY'
import json, sys
try: j = json.load(open("/tmp/r.json"))
except Exception as e: print(sys.argv[1], sys.argv[2], "no JSON", e); sys.exit(0)
print(f"{j['model']} {j['scheme']['weights']} d{j['depth']}: pp512 {j['pp']['tokens_per_s']:.0f} t/s, "
      f"tg128 {j['tg']['tokens_per_s']:.1f} t/s = {j['roofline_percent']:.1f}% of {j['roofline_tokens_per_s']:.0f} "
      f"(KV {j['kv_bytes_per_token']/2**20:.0f} MiB a step beside {j['weight_bytes']/2**30:.2f} GiB of weights)")
PY
    done
  done
fi
if [[ $phases == *" llama "* ]]; then
  while pgrep -f device_llamacpp_build.sh > /dev/null; do sleep 5; done
  "$here/device_llamacpp_build.sh" "$bundle" llama-bench || exit 1
  for f in "${files[@]}"; do
    echo "== $(basename "$f")"
    "${LLAMA_DIR:-/tmp/llama}/build/bin/llama-bench" -m "$f" -ngl 99 -p 512 -n 128 -fa 1 -r ${REPS:-3} \
      -d "$(echo $depths | tr ' ' ',')" -o md 2>&1 | grep -E "^\| (gemma|model)|error|failed" | sed 's/^/  /'
  done
fi
