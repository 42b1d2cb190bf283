#!/usr/bin/env bash
# On the GPU machine (device tool): train the demo model's speculative-decoding draft
# (issue 55) in one call of about 4.5 minutes on an H100, and return it as a Hugging Face
# directory.
#   tools/train_demo/device_train_draft.sh CORPUS TOKENIZER OUT UNICORN_CONVERT
# UNICORN_CONVERT is a unicorn-convert binary carried from the development machine: it
# gives the draft's dimensions (--hf-config) and converts the result, so the draft comes
# back as OUT/gemma3-demo-draft.gguf (F16, Q4_0 embedding), which is what users keep;
# with SKIP_CONVERT=1 it comes back as a Hugging Face directory instead.
# CORPUS is make_corpus.py's directory (train.txt, heldout.txt; made on the development
# machine from Debian packages), TOKENIZER the Gemma 3 tokenizer.json (the build's, from
# npm), plain or as .gz / .xz. Needs python3 with torch, transformers and tokenizers; no
# network. SMOKE=0 skips the 30-step run that first proves the whole script in seconds.
# OUT receives train.log, train_log.json and gemma3-demo-draft/: config.json,
# generation_config.json and model.safetensors in 15 MB parts (the device tool returns
# files of at most 16 MiB) with its sha256. On the development machine, with OUT
# where the files came back to and tokenizer.json the one trained with:
#   d=/tmp/gemma3-demo-draft  # the directory's name becomes the GGUF's general.name
#   mkdir -p $d && cp OUT/gemma3-demo-draft/*.json tokenizer.json $d/
#   cat OUT/gemma3-demo-draft/model.safetensors.part-* > $d/model.safetensors
#   (cd $d && sha256sum -c) < OUT/gemma3-demo-draft/model.safetensors.sha256
#   build/bin/unicorn-convert --hf $d --type F16 --embedding Q4_0 --out models/gemma3-demo-draft.gguf
set -euo pipefail
corpus=$1 tokenizer=$2 out=$3 convert=$4
here=$(dirname "$0")
work=/tmp/train_draft
mkdir -p "$out" "$work"
python3 - "$tokenizer" "$work/tokenizer.json" <<'EOF'
import gzip, lzma, shutil, sys
src, dst = sys.argv[1:]
opener = gzip.open if src.endswith(".gz") else lzma.open if src.endswith(".xz") else open
with opener(src, "rb") as f, open(dst, "wb") as g:
    shutil.copyfileobj(f, g)
EOF
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
"$convert" --random gemma3-demo-draft --hf-config "$work/dims.json"  # the engine's dimensions
if [ "${SMOKE:-1}" != 0 ]; then
  python3 "$here/train.py" --model draft --dims "$work/dims.json" --corpus "$corpus" --tokenizer "$work/tokenizer.json" \
    --out "$work/smoke" --steps 20 --qat-steps 10 --eval-every 10 --eval-windows 4
  python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); print("smoke config:", {k: c[k] for k in
    ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
     "intermediate_size", "layer_types")})' "$work/smoke/gemma3-demo-draft/config.json"
  echo "== smoke run passed"
fi
start=$(date +%s)
python3 "$here/train.py" --model draft --dims "$work/dims.json" --corpus "$corpus" --tokenizer "$work/tokenizer.json" --out "$work/run" \
  2>&1 | tee "$out/train.log"
echo "== trained in $(($(date +%s) - start)) s"
dir=$work/run/gemma3-demo-draft
mkdir -p "$out/gemma3-demo-draft"
cp "$dir"/*.json "$out/gemma3-demo-draft/"
if [ -z "${SKIP_CONVERT:-}" ]; then
  [ -f "$dir/tokenizer.json" ] || cp "$work/tokenizer.json" "$dir/"
  "$convert" --hf "$dir" --type F16 --embedding Q4_0 --out "$out/gemma3-demo-draft.gguf"
  rm -f "$out/gemma3-demo-draft/tokenizer.json"
  cp "$work/run/train_log.json" "$out/"
  ls -l "$out" "$out/gemma3-demo-draft"
  echo "== done in $(($(date +%s) - start)) s"
  exit 0
fi
rm -f "$out/gemma3-demo-draft/tokenizer.json"  # 33 MB, and the lead has it
(cd "$dir" && sha256sum model.safetensors) > "$out/gemma3-demo-draft/model.safetensors.sha256"
split -b 15M "$dir/model.safetensors" "$out/gemma3-demo-draft/model.safetensors.part-"
cp "$work/run/train_log.json" "$out/"
ls -l "$out/gemma3-demo-draft"
echo "== done in $(($(date +%s) - start)) s"
