#!/usr/bin/env bash
# On the GPU machine: decode speed (tg) of random-weight Gemma 3 models for
# several matvec shapes "rows,lanes,unroll" — rows per row group
# (UNICORN_MATVEC_ROWS), lanes per row group (UNICORN_MATVEC_LANES, 0 = the
# engine's choice per matrix), blocks per lane per pass (UNICORN_MATVEC_UNROLL):
#   MODELS="gemma3-27b:Q4_0 gemma3-1b:Q4_0" SHAPES="4,0,1 4,32,1 2,64,2" \
#     bash tools/matvec_sweep.sh       (device tool; carry .gl and .carry with the binaries)
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
B=${BIN:-.carry/bin}
mkdir -p /tmp/sweep
for spec in ${MODELS:-gemma3-27b:Q4_0}; do
  IFS=: read -r model type <<<"$spec"
  M=/tmp/sweep/$model-$type.gguf
  [ -f "$M" ] || $B/unicorn-convert --random "$model" --type "$type" --out "$M" >/dev/null || exit 1
  for shape in ${SHAPES:-4,0,1}; do
    IFS=, read -r rows lanes unroll <<<"$shape"
    j=/tmp/sweep/$model-$type-$rows-$lanes-$unroll.json
    UNICORN_MATVEC_ROWS=$rows UNICORN_MATVEC_LANES=$lanes UNICORN_MATVEC_UNROLL=$unroll \
      $B/unicorn-bench -m "$M" -p ${PROMPT:-16} -n ${TOKENS:-128} -r 2 --json > "$j" 2>&1
    python3 -c "import json;j=json.load(open('$j'));print('$spec rows,lanes,unroll $shape: tg',round(j['tg']['tokens_per_s'],1),'t/s',round(j['roofline_percent'],1),'%')" \
      || tail -3 "$j"
  done
done
