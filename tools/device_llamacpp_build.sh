#!/usr/bin/env bash
# On the GPU machine (device tool): builds llama.cpp with CUDA (sm_90) from a
# git bundle or a source archive into $LLAMA_DIR (default /tmp/llama; outside the repository, never
# committed), only the targets named, unless they are already built there.
# Sourced or run by the llama.cpp comparison scripts (device_llamacpp_vision.sh,
# device_llamacpp_bench.sh).
#   tools/device_llamacpp_build.sh SOURCE TARGET...
# SOURCE: a git bundle of llama.cpp (node-llama-cpp's llama/gitRelease.bundle),
# or a .tar.xz of its tree (`git archive HEAD | xz`: a sixth of the bundle's
# size, for the device tool's 64 MiB).
# The build runs niced on all but two cores (BUILD_CPUS: taskset's list), so a
# benchmark may run beside it on the two left.
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BUNDLE TARGET..." >&2
  exit 2
fi
bundle=$1; shift
dir=${LLAMA_DIR:-/tmp/llama}
for tool in git cmake nvcc; do
  command -v "$tool" >/dev/null || { echo "$0: $tool is not on PATH; it is needed to build llama.cpp with CUDA" >&2; exit 1; }
done
missing=0
for t in "$@"; do [ -x "$dir/build/bin/$t" ] || missing=1; done
[ $missing = 0 ] && exit 0
[ -f "$bundle" ] || { echo "$0: $bundle: no such file" >&2; exit 1; }
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -d "$dir/src" ]; then
  mkdir -p "$dir/src" || exit 1
  case $bundle in
    *.tar.xz) tar xJf "$bundle" -C "$dir/src" || { echo "$0: cannot unpack $bundle" >&2; exit 1; } ;;
    *) git clone -q "$bundle" "$dir/src" || { echo "$0: cannot clone $bundle" >&2; exit 1; }
       echo "llama.cpp $(git -C "$dir/src" rev-parse HEAD)" ;;
  esac
fi
cpus=${BUILD_CPUS:-2-$(($(nproc) - 1))}
start=$(date +%s)
taskset -c "$cpus" nice -n 19 cmake -S "$dir/src" -B "$dir/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA_ALL_QUANTS=OFF -DGGML_CUDA_NCCL=OFF \
  -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
  > "$dir/configure.log" 2>&1 || { tail -20 "$dir/configure.log"; exit 1; }
jobs=$(($(nproc) > 4 ? $(nproc) - 2 : 2))
taskset -c "$cpus" nice -n 19 cmake --build "$dir/build" --target "$@" -j"$jobs" > "$dir/build.log" 2>&1 ||
  { tail -30 "$dir/build.log"; exit 1; }
echo "built $* in $(($(date +%s) - start)) s"
