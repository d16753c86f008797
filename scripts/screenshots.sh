#!/usr/bin/env bash
# Renders the README's and issue 42's screenshots with headless Chromium into
# docs/ (or $1): the demo's report.html, a 32-replica fleet with CPU and
# shared-store tiers on the Mooncake conversation trace, and compare.html with
# 12 policies in engine mode. Needs a built binary (build/), chromium and
# ../shared's traces.
set -euo pipefail
cd "$(dirname "$0")/.."
P=${PREFIXSIM:-build/sim/cli/prefixsim}
OUT=${1:-docs}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
shot() {  # html png height
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="1280,$3" \
    --screenshot="$2" "file://$(realpath "$1")" 2>/dev/null
}
"$P" replay --workload multi-turn --kv-tokens 100000 --out "$TMP/demo" --quiet
shot "$TMP/demo/report.html" "$OUT/report.png" 2900
"$P" replay ../shared/traces/mooncake/conversation_trace.jsonl --replicas 32 --router kv-aware \
  --kv-offloading-size 20 --kv-tier "store:size=2000,read=10,write=5,latency=200,shared" --out "$TMP/fleet32" --quiet
shot "$TMP/fleet32/report.html" "$OUT/report-fleet32.png" 4200
"$P" generate multi-turn --requests 1500 -o "$TMP/mt.jsonl" >/dev/null 2>&1
"$P" compare "$TMP/mt.jsonl" --mode engine --kv-tokens 40000,70000,100000 --threads 2 --out "$TMP/cmp" --quiet \
  --policies lru,fifo,lfu,lfu-da,gdsf,arc,2q,s3fifo,sieve,tinylfu,leaf-first,tinylfu:window=0.01
shot "$TMP/cmp/compare.html" "$OUT/compare-12-policies.png" 2000
echo "wrote $OUT/report.png $OUT/report-fleet32.png $OUT/compare-12-policies.png"
