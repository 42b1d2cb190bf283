#!/usr/bin/env bash
# On the GPU machine: decode speed of Gemma 3 27B Q4_0 (random weights) for
# several matvec rows-per-subgroup values (kernels::kMatVecRows), like
#   bash tools/matvec_sweep.sh       (device tool; carry .gl and .carry with the binaries)
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
B=.carry/bin; M=/tmp/m.gguf
$B/unicorn-convert --random gemma3-27b --type Q4_0 --out $M >/dev/null
for rows in ${ROWS_LIST:-1 2 4 8 16}; do
  UNICORN_MATVEC_ROWS=$rows $B/unicorn-bench -m $M -p 16 -n 64 -r 2 --json > $OUT/rows$rows.json 2>&1
  python3 -c "import json;j=json.load(open('$OUT/rows$rows.json'));print('rows',$rows,'tg',round(j['tg']['tokens_per_s'],1),'%',round(j['roofline_percent'],1))"
done
