#!/usr/bin/env bash
# The peer check of issue 54 (notes/file_types.md): each GGUF file's logits
# from llama.cpp and from the engine unicorn-generate picks, the same 32
# tokens, compared (KL, top token), and each against REFERENCE's llama.cpp
# logits (an F16 file of the same weights).
#   tools/peer/peer_logits.sh LLAMA_SRC LLAMA_BUILD REFERENCE FILE...
# LLAMA_SRC, LLAMA_BUILD: a llama.cpp checkout and its CPU build (outside the
# repository; libllama.a and ggml's static libraries). Ours: unicorn-generate
# --tokens ... --logits-out, the engine it picks for the file.
set -euo pipefail
src=$1 lb=$2 ref=$3; shift 3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -O2 -std=c++17 -I"$src/include" -I"$src/ggml/include" "$here/llamacpp_logits.cpp" "$lb/src/libllama.a" \
  "$lb/ggml/src/libggml.a" "$lb/ggml/src/libggml-cpu.a" "$lb/ggml/src/libggml-base.a" -fopenmp -lpthread -ldl \
  -o "$work/llamacpp_logits"
"$work/llamacpp_logits" "$ref" 32 "$work/reference.bin" > /dev/null 2>&1
tokens=2  # the sequence llamacpp_logits.cpp feeds: bos, then (37 i + 11) mod V
for i in $(seq 1 31); do tokens+=,$(((i * 37 + 11) % 262144)); done
for f in "$@"; do
  name=$(basename "$f" .gguf)
  "$work/llamacpp_logits" "$f" 32 "$work/llama.bin" > /dev/null 2>&1
  "$here/../../build/bin/unicorn-generate" --model "$f" -c 512 --tokens "$tokens" --logits-out "$work/ours.bin" \
    2>&1 | grep "engine"
  echo "$name: ours against llama.cpp's: $(python3 "$here/kl.py" "$work/llama.bin" "$work/ours.bin")"
  echo "$name: F16 against llama.cpp's: $(python3 "$here/kl.py" "$work/reference.bin" "$work/llama.bin")"
  echo "$name: F16 against ours: $(python3 "$here/kl.py" "$work/reference.bin" "$work/ours.bin")"
done
