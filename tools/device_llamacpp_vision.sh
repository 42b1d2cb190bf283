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
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

if [ ! -x "$dir/build/bin/llama-mtmd-cli" ]; then
  rm -rf "$dir" && mkdir -p "$dir" || exit 1
  git clone -q "$bundle" "$dir/src" || { echo "$0: cannot clone $bundle" >&2; exit 1; }
  echo "llama.cpp $(git -C "$dir/src" rev-parse HEAD)"
  start=$(date +%s)
  cmake -S "$dir/src" -B "$dir/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA_ALL_QUANTS=OFF -DGGML_CUDA_NCCL=OFF \
    -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
    > "$dir/configure.log" 2>&1 || { tail -20 "$dir/configure.log"; exit 1; }
  cmake --build "$dir/build" --target llama-mtmd-cli llama-bench -j16 > "$dir/build.log" 2>&1 ||
    { tail -30 "$dir/build.log"; exit 1; }
  echo "built llama-mtmd-cli and llama-bench in $(($(date +%s) - start)) s"
fi

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
for run in 1 2 3; do
  echo "== run $run"
  "$dir/build/bin/llama-mtmd-cli" -m "$model" --mmproj "$mmproj" --image "$image" \
    -p "What is in this picture? Answer in one word." -n 1 --temp 0 -ngl 99 -c 4096 > "$dir/run$run.log" 2>&1
  echo "exit $?"
  grep -E "encoded in|decoded \(batch|prompt eval time|load time|eval time|total time|error|failed" "$dir/run$run.log"
done
