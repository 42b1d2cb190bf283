#!/usr/bin/env bash
# On the GPU machine (device tool): unicorn-bench beside llama.cpp CUDA's
# llama-bench on the same random-weight files of llama-quantize's file types
# (notes/file_types.md), in phases that may run as separate calls on one warm
# machine (PHASES, default "files unicorn llama"):
#   files    write each file (unicorn-convert, every core), then start
#            llama.cpp's build, detached, on all cores but 0 and 1
#            (device_llamacpp_build.sh);
#   unicorn  unicorn-bench on cores 0 and 1 (its work is the GPU's), and
#            unicorn-bench-base beside it where BIN_DIR has one;
#   llama    wait for the build, then llama-bench on each file.
#   tools/device_file_types.sh BIN_DIR OUT_DIR BUNDLE model:type[:embedding] ...
# BIN_DIR: unicorn-convert and unicorn-bench (.xz-compressed, as carried).
# NO_LLAMA=1: no llama.cpp build (a call with little device time left).
set -uo pipefail
B=$1 out=$2 bundle=$3; shift 3
here=$(cd "$(dirname "$0")" && pwd)
phases=" ${PHASES:-files unicorn llama} "
source "$here/device_env.sh"
(cd "$B" && for f in *.xz; do [ -e "$f" ] && xz -df "$f"; done; chmod +x ./*)
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
files=() specs=("$@")
for spec in "$@"; do
  IFS=: read -r m t e <<<"$spec"
  files+=("$models/$m-$t${e:+-emb$e}.gguf")
done
llama=${LLAMA_DIR:-/tmp/llama}/build/bin/llama-bench
if [[ $phases == *" files "* ]]; then
  for i in "${!files[@]}"; do
    [ -f "${files[$i]}" ] && continue
    IFS=: read -r m t e <<<"${specs[$i]}"
    s=$(date +%s)
    "$B/unicorn-convert" --random "$m" --type "$t" ${e:+--embedding "$e"} --out "${files[$i]}" > /dev/null ||
      echo "convert ${specs[$i]} failed"
    echo "wrote ${specs[$i]}: $(du -h "${files[$i]}" | cut -f1) in $(($(date +%s) - s)) s"
  done
  [ -x "$llama" ] || [ -n "${NO_LLAMA:-}" ] || setsid nohup "$here/device_llamacpp_build.sh" "$bundle" llama-bench \
    > /tmp/llama_build.log 2>&1 < /dev/null &
fi
if [[ $phases == *" unicorn "* ]]; then
  cat > /tmp/sum.py <<'PY'
import json, sys
try: j = json.load(open(sys.argv[1]))
except Exception as e: print(sys.argv[2], "no JSON", e); sys.exit(0)
print(f"{sys.argv[2]}: {j['scheme']['formats']}: pp{j['pp']['tokens']} {j['pp']['tokens_per_s']:.0f} t/s, "
      f"tg{j['tg']['tokens']} {j['tg']['tokens_per_s']:.1f} t/s = {j['roofline_percent']:.1f}% of "
      f"{j['roofline_tokens_per_s']:.0f} (weights {j['weight_bytes']/2**30:.2f} GiB)")
PY
  for i in "${!files[@]}"; do
    for b in unicorn-bench-base unicorn-bench; do
      [ -x "$B/$b" ] || continue
      taskset -c 0,1 "$B/$b" --model "${files[$i]}" -p 512 -n 128 -r ${REPS:-3} --json > /tmp/r.json 2>> "$out/err.txt"
      python3 /tmp/sum.py /tmp/r.json "${specs[$i]} $b"
    done
  done
fi
if [[ $phases == *" llama "* ]]; then
  while pgrep -f device_llamacpp_build.sh > /dev/null; do sleep 5; done
  tail -3 /tmp/llama_build.log 2>/dev/null
  "$here/device_llamacpp_bench.sh" "$bundle" "${files[@]}"
fi
