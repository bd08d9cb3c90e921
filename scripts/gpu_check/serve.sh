# shellcheck shell=bash
# Sourced by scripts/gpu_check.sh: the `serve` mode, the OpenAI server under load (issue 48):
# `lumen serve --device cuda` and `lumen bench serve` at 1, 64 and 256 streams, then llama.cpp's
# CUDA llama-server on the same files where the peer archive has it.

# Whether a server answers /health on port $1 within $2 seconds (503 while it loads).
wait_healthy() {
  local port=$1 i
  for ((i = 0; i < $2; ++i)); do
    python3 -c 'import sys, urllib.request
urllib.request.urlopen("http://127.0.0.1:%s/health" % sys.argv[1], timeout=2)' "$port" 2> /dev/null && return 0
    sleep 1
  done
  return 1
}

# serve_load LABEL SPEC FILE PORT STREAMS: `lumen bench serve` against the server on PORT, STREAMS
# requests in flight (one stream: 8 requests one after another; more: twice as many requests as
# streams, at most 256), 256 random prompt tokens and 128 answer tokens each; one JSON line.
serve_load() {
  local label=$1 spec=$2 file=$3 port=$4 n=$5 prompts
  prompts=$((n == 1 ? 8 : (2 * n > 256 ? 256 : 2 * n)))
  timeout 300 "$BIN/lumen" bench serve --base-url "http://127.0.0.1:$port" --num-prompts "$prompts" \
    --max-concurrency "$n" --input-len 256 --output-len 128 --vocab-from "$file" --label "$label" --json \
    2> "$WORK/serve-$label-${spec/:/-}-$n.err" |
    python3 -c 'import json, sys
d = json.load(sys.stdin)
d["check_serve"] = int(sys.argv[1])
d["server"] = sys.argv[2]
d["model"] = sys.argv[3]
print(json.dumps(d))' "$n" "$label" "$spec" | tee -a "$RESULTS"
}

# See "serve" at the top. Each server is stopped before the next starts.
run_serve() {
  local vocab="${LUMEN_VOCAB:-$BUNDLE/vocab.gguf}" spec preset type file n pid port=18080
  for spec in ${GPU_CHECK_SERVE_MODELS:-llama-1b:Q4_0 llama-8b:Q4_0}; do
    preset=${spec%%:*}; type=${spec##*:}
    file=$(synth_model "$spec") || continue
    LUMEN_CUDA_GRAPHS=1 "$BIN/lumen" serve -m "$file" --device cuda --port "$port" --max-num-seqs 256 \
      > "$WORK/serve-lumen-$preset-$type.log" 2>&1 &
    pid=$!
    if wait_healthy "$port" 180; then
      for n in 1 64 256; do
        [ "$preset" = llama-8b ] && [ "$n" = 256 ] && continue
        serve_load lumen "$spec" "$file" "$port" "$n"
      done
    else
      log "lumen serve on $spec did not come up:"; tail -n 5 "$WORK/serve-lumen-$preset-$type.log" >&2
    fi
    kill "$pid" 2> /dev/null; wait "$pid" 2> /dev/null
    if [ -x "$BIN/llama-server" ]; then
      "$BIN/llama-server" -m "$file" -ngl 999 -np 64 -c $((64 * 512)) --host 127.0.0.1 --port "$port" \
        > "$WORK/serve-llama-server-$preset-$type.log" 2>&1 &
      pid=$!
      if wait_healthy "$port" 180; then
        for n in 1 64; do serve_load llama-server "$spec" "$file" "$port" "$n"; done
      else
        log "llama-server on $spec did not come up:"; tail -n 5 "$WORK/serve-llama-server-$preset-$type.log" >&2
      fi
      kill "$pid" 2> /dev/null; wait "$pid" 2> /dev/null
    else
      log "no llama-server in the bundle (prepare with LLAMA_SERVER_CUDA=...): lumen alone"
    fi
  done
}
