#!/usr/bin/env bash
# On the GPU machine (device tool): the server's speed beside unicorn-bench
# --batch on the same random-weight file.
#   tools/device_serve_bench.sh BIN_DIR OUT_DIR model:server_binary ...
# e.g. tools/device_serve_bench.sh .carry/bin $OUT gemma3-4b:unicorn-bench-server-4b-q4_0
# For each model (every matrix Q4_0, unicorn-convert --random): unicorn-bench
# --batch N -p PROMPT -n TOKENS -r REPS for N in BATCH (default "8 32": the steps'
# aggregate, the prompts' prefill, and the whole run's generated tokens/s, the
# same work as N clients of the server), then the
# server (its flags: SERVER_FLAGS, e.g. "--batch-invariance off") with unicorn-serve-bench for CLIENTS
# (default "1,8,32,64") clients, PROMPT-token prompts (default 128) and TOKENS generated
# tokens (default 128),
# REQUESTS (default 2) requests per client; CHAT_CACHE=N adds the second-chat-
# turn test with a system prompt of ~N tokens. TOKENIZER: a tokenizer.json
# for the server (random-weight files carry none). Binaries are built here and
# carried (.carry/bin), with the loader packages in .gl (device README).
set -uo pipefail
bin=$1 out=$2
shift 2
source "$(dirname "$0")/device_env.sh"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$out/gpu.txt"
for spec in "$@"; do
  IFS=: read -r model server <<<"$spec"
  file="$models/$model-Q4_0.gguf"
  [ -f "$file" ] || "$bin/unicorn-convert" --random "$model" --type Q4_0 --out "$file" >/dev/null || exit 1
  for n in ${BATCH-8 32}; do
    "$bin/unicorn-bench" --model "$file" --batch "$n" -p ${PROMPT:-128} -n ${TOKENS:-128} -r ${REPS:-3} --json \
      > "$out/$model-batch$n.json" 2> "$out/$model-batch$n.err"
    python3 -c "import json,sys; b=json.load(open(sys.argv[1]))['batch']; print(f'$model unicorn-bench --batch {b[\"streams\"]}: {b[\"tokens_per_s\"]:.1f} t/s [{b[\"linear\"]}]; prefill {b[\"prefill_tokens_per_s\"]:.0f} t/s, whole run {b[\"whole_run_tokens_per_s\"]:.1f} t/s')" \
      "$out/$model-batch$n.json" || tail -3 "$out/$model-batch$n.err"
  done
  log="$out/$model-server.log"
  "$bin/$server" --model "$file" ${TOKENIZER:+--tokenizer "$TOKENIZER"} --port 0 --quiet ${SERVER_FLAGS:-} 2> "$log" &
  pid=$!
  port=""
  for _ in $(seq 600); do
    grep -q "ready on" "$log" && port=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$log" | head -1) && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.5
  done
  if [ -z "$port" ]; then echo "$model: the server did not start"; cat "$log"; continue; fi
  grep "ready on" "$log"
  "$bin/unicorn-serve-bench" --port "$port" --clients "${CLIENTS:-1,8,32,64}" --requests "${REQUESTS:-2}" \
    --prompt ${PROMPT:-128} --tokens ${TOKENS:-128} --json "$out/$model-serve.json"
  [ -n "${CHAT_CACHE:-}" ] && "$bin/unicorn-serve-bench" --port "$port" --chat-cache "$CHAT_CACHE" \
    --json "$out/$model-chat-cache.json"
  # The server's own counts: decode steps, how many ran beside a prefill pass, prefill passes.
  python3 -c "import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1]).read().decode())" \
    "http://127.0.0.1:$port/metrics" > "$out/$model-metrics.txt" 2>&1
  grep -E '^unicorn_(decode_steps|decode_steps_beside_prefill|prefill_passes)_total' "$out/$model-metrics.txt"
  kill -TERM $pid
  wait $pid
  echo "$model server exit status $?"
done
