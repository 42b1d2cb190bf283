#!/usr/bin/env bash
# On the GPU machine (device tool): two builds of unicorn-bench side by side on
# the same random-weight files, alternating, so a change is measured against
# its base on one device in one run (README's rule for performance work).
#   tools/device_compare.sh BIN_DIR OUT_DIR model:type[:embedding] ...
# BIN_DIR holds unicorn-convert, unicorn-bench-base and unicorn-bench (each
# may be .xz-compressed, as carried). 4B Q4_0 also runs --batch 32.
set -u; B=$1 out=$2; shift 2; source "$(dirname "$0")/device_env.sh"
(cd "$B" && for f in *.xz; do [ -e "$f" ] && xz -d "$f"; done; chmod +x *)
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
cat > /tmp/sum.py <<'PY'
import json, sys
try: j = json.load(open(sys.argv[1]))
except Exception as e: print(sys.argv[2], "no JSON", e); sys.exit(0)
if 'batch' in j and j['batch']:
    b=j['batch']; print(f"{sys.argv[2]}: batch {b['streams']} {b['tokens_per_s']:.1f} t/s ({b['min']:.1f}..{b['max']:.1f}) {b['roofline_percent']:.1f}% [{b['linear']}]")
else:
    print(f"{sys.argv[2]}: pp{j['pp']['tokens']} {j['pp']['tokens_per_s']:.0f} t/s, tg{j['tg']['tokens']} {j['tg']['tokens_per_s']:.1f} t/s = {j['roofline_percent']:.1f}% of {j['roofline_tokens_per_s']:.0f}, load {j['load_seconds']:.2f} s")
PY
for spec in "$@"; do
  IFS=: read -r m t e <<<"$spec"; f=$models/$m-$t.gguf
  $B/unicorn-convert --random $m --type $t ${e:+--embedding $e} --out $f > /dev/null 2>>$out/err.txt || echo "convert $spec failed"
  for r in 1 2; do for b in unicorn-bench-base unicorn-bench; do
    $B/$b --model $f -p 512 -n 128 -r 3 --json > /tmp/r.json 2>>$out/err.txt; python3 /tmp/sum.py /tmp/r.json "$spec $b #$r"
  done; done
  if [ "$spec" = gemma3-4b:Q4_0 ]; then for b in unicorn-bench-base unicorn-bench; do
    $B/$b --model $f --batch 32 -p 128 -n 128 -r 3 --json > /tmp/r.json 2>>$out/err.txt; python3 /tmp/sum.py /tmp/r.json "$spec $b batch32"
  done; fi
done
tail -5 $out/err.txt
