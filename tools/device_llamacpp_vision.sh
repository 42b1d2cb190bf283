#!/usr/bin/env bash
# On the GPU machine (device tool): llama.cpp's time to the first token of a
# question about one image, the baseline for Gemma 3's image path
# (notes/vision_llamacpp.md). Builds llama.cpp with CUDA from a git bundle
# into /tmp/llama (outside the repository; only llama-mtmd-cli and
# llama-bench, for sm_90), then runs llama-mtmd-cli -n 1 three times and
# prints its timing lines: the image's encode, its decode into the KV cache,
# and the prompt's evaluation.
#   tools/device_llamacpp_vision.sh BUNDLE MODEL MMPROJ IMAGE
# BUNDLE: a git bundle of llama.cpp (node-llama-cpp's llama/gitRelease.bundle);
# MODEL, MMPROJ: a Gemma 3 GGUF and its mmproj; IMAGE: an 896x896 picture
# (no resize then, in either engine). LLAMA_DIR moves the build (default /tmp/llama).
set -uo pipefail
if [ $# -ne 4 ]; then
  echo "usage: $0 BUNDLE MODEL MMPROJ IMAGE" >&2
  exit 2
fi
bundle=$1 model=$2 mmproj=$3 image=$4
dir=${LLAMA_DIR:-/tmp/llama}
for tool in git cmake nvcc; do
  command -v "$tool" >/dev/null || { echo "$0: $tool is not on PATH; it is needed to build llama.cpp with CUDA" >&2; exit 1; }
done
for f in "$bundle" "$model" "$mmproj" "$image"; do
  [ -f "$f" ] || { echo "$0: $f: no such file" >&2; exit 1; }
done
"$(dirname "$0")/device_llamacpp_build.sh" "$bundle" llama-mtmd-cli llama-bench || exit 1

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
for run in 1 2 3; do
  echo "== run $run"
  "$dir/build/bin/llama-mtmd-cli" -m "$model" --mmproj "$mmproj" --image "$image" \
    -p "What is in this picture? Answer in one word." -n 1 --temp 0 -ngl 99 -c 4096 > "$dir/run$run.log" 2>&1
  echo "exit $?"
  grep -E "encoded in|decoded \(batch|prompt eval time|load time|eval time|total time|error|failed" "$dir/run$run.log"
done
