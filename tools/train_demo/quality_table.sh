#!/usr/bin/env bash
# The quality table of docs/demo_model.md: the demo model in every format the engine runs,
# its perplexity on held-out text and its KL divergence from the F16 run,
# beside the file's size (unicorn-perplexity, llama-perplexity's method).
#   tools/train_demo/quality_table.sh BIN_DIR TEXT CTX OUT_DIR [unicorn-perplexity flags...]
# from the checkout's root (it reads models/gemma3-demo.gguf), e.g.
#   tools/train_demo/quality_table.sh build/bin tests/perplexity/heldout.txt 512 /tmp/table
# Writes OUT_DIR/gemma3-demo-<format>.gguf (kept for another run), <format>.json
# and table.md; the F16 run's base file (0.5 MB a scored token) is removed at the end.
set -euo pipefail
bin=$1 text=$2 ctx=$3 out=$4
shift 4
mkdir -p "$out"
for format in F32 F16 BF16 Q8_0 Q4_0; do
  file=$out/gemma3-demo-$format.gguf
  [ -f "$file" ] || "$bin/unicorn-convert" --gguf models/gemma3-demo.gguf --type $format --out "$file" >/dev/null
done
cp models/gemma3-demo.gguf "$out/gemma3-demo-shipped.gguf"
"$bin/unicorn-perplexity" -m "$out/gemma3-demo-F16.gguf" -f "$text" -c "$ctx" --json \
  --kl-divergence-base "$out/f16.kld" "$@" > "$out/F16.json"
for format in F32 BF16 Q8_0 Q4_0 shipped; do
  "$bin/unicorn-perplexity" -m "$out/gemma3-demo-$format.gguf" --kl-divergence-base "$out/f16.kld" --kl-divergence \
    --json "$@" > "$out/$format.json"
done
rm -f "$out/f16.kld"
python3 - "$out" <<'PY' | tee "$out/table.md"
import json, os, sys
out = sys.argv[1]
names = {"shipped": "Q4_0 embedding + F16 (shipped)"}
rows = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "shipped"]
first = json.load(open(os.path.join(out, "F16.json")))
print(f"{first['device']}: {first['chunks']} windows of {first['ctx']} tokens, {first['scored']} scored\n")
print("| format | file | PPL | vs F16 | mean KLD vs F16 | same top token | tokens/s |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for r in rows:
    j = json.load(open(os.path.join(out, f"{r}.json")))
    size = os.path.getsize(os.path.join(out, f"gemma3-demo-{r}.gguf")) / 1e6
    vs = f"{100 * (j['ppl'] / first['ppl'] - 1):+.2f} %"
    kld = f"{j['kld']['mean']:.5f} ± {j['kld']['uncertainty']:.5f}" if "kld" in j else "(base)"
    top = f"{100 * j['same_top']['fraction']:.2f} %" if "same_top" in j else "(base)"
    print(f"| {names.get(r, r)} | {size:.1f} MB | {j['ppl']:.4f} ± {j['ppl_uncertainty']:.4f} | {vs} | {kld} | {top} "
          f"| {j['tokens_per_second']:.0f} |")
PY
