#!/usr/bin/env bash
# The pictures: writes the compare and bench pages and opens them, and the
# status page of a running example gateway (a canary, circuit breakers on),
# in a headless Chromium from Debian; fails on a console message of any
# page (ours write none: a line is an uncaught error or a refused
# Content-Security-Policy), on a blank screenshot (.ci/pagecheck.go), on a
# page without its elements, or on a planted secret in the status page.
# The screenshots stay in $FUSION_SCREENSHOTS (default
# /tmp/fusion-screenshots). Run from the repository root: bash .ci/pictures.sh
set -euo pipefail
export PATH="/usr/local/go/bin:$PATH"
shots=${FUSION_SCREENSHOTS:-/tmp/fusion-screenshots}
work=$(mktemp -d /tmp/fusion-pictures.XXXXXX)
mkdir -p "$shots"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

browser=$(command -v chromium || true)
if [ -z "$browser" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "missing chromium: run as root, or apt-get install chromium"; exit 1
  fi
  echo "installing chromium"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends chromium >/dev/null || { apt-get update >/dev/null; apt-get install -y --no-install-recommends chromium >/dev/null; }
  browser=$(command -v chromium)
fi
echo "browser: $("$browser" --version 2>/dev/null || echo chromium)"

# open NAME URL WAIT_MS ELEMENT...: a screenshot and the DOM after WAIT_MS
# of virtual time; fails on a console line, a blank picture or a missing
# element (a string of the DOM).
open_page() {
  local name=$1 url=$2 wait=$3; shift 3
  local flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run --enable-logging=stderr --v=0
    --virtual-time-budget="$wait" --window-size=1280,2000)
  timeout 90 "$browser" "${flags[@]}" --screenshot="$shots/$name.png" "$url" >/dev/null 2>"$work/$name.shot.log"
  timeout 90 "$browser" "${flags[@]}" --dump-dom "$url" >"$work/$name.dom.html" 2>"$work/$name.dom.log"
  if grep -h 'CONSOLE' "$work/$name.shot.log" "$work/$name.dom.log"; then
    echo "page $name: console messages above"; exit 1
  fi
  local want
  for want in "$@"; do
    grep -q -- "$want" "$work/$name.dom.html" || { echo "page $name: no $want in its DOM"; exit 1; }
  done
  go run .ci/pagecheck.go "$shots/$name.png"
}

go build -o "$work/fusion-transport" ./cmd/fusion-transport
ft=$work/fusion-transport

echo "-- compare and bench pages"
"$ft" compare -html "$work/compare.html" -json "$work/compare.json" -sides legacy,sockets:nethttp,sockets:h1 >/dev/null
"$ft" bench -rounds 1 -duration 1s -warmup 500ms -vus 4 -html "$work/bench.html" -json "$work/bench.json" >/dev/null 2>"$work/bench.err" ||
  { tail -n 20 "$work/bench.err"; exit 1; }
open_page compare "file://$work/compare.html" 1000 'class="pair"' 'class="schema"' 'class="identical"'
open_page bench "file://$work/bench.html" 1000 'class="latency"' 'class="curve"' 'class="pt"' 'class="median"' 'class="target"'

echo "-- the status page of an example gateway (canary:50%, circuit breakers on)"
"$ft" schemas >"$work/schemas.txt" 2>"$work/schemas.err" &
pids+=($!)
for _ in $(seq 100); do [ "$(wc -l <"$work/schemas.txt")" -ge 4 ] && break; sleep 0.1; done
# A URL password and a headers.set token the page must not show.
list=$(awk '{sub("http://", "http://ci:ci-url-pa55word@", $2); printf "%s%s=%s", (NR>1?",":""), $1, $2}' "$work/schemas.txt")
cat >"$work/gateway.yaml" <<YAML
forward_headers: [Authorization]
defaults:
  circuit_breaker: {enabled: true}
  headers:
    set: {X-Api-Key: ci-set-token-2b7}
YAML
FUSION_SOCKETS_TRANSPORT=canary:50% "$ft" gateway -config "$work/gateway.yaml" -schemas "$list" >"$work/gateway.txt" 2>"$work/gateway.err" &
pids+=($!)
for _ in $(seq 100); do grep -q '^ready ' "$work/gateway.txt" && break; sleep 0.1; done
base=$(awk '/^ready /{print $2}' "$work/gateway.txt")
[ -n "$base" ] || { cat "$work/gateway.err"; echo "the gateway did not start"; exit 1; }
for i in $(seq 40); do
  curl -fsS -o /dev/null -H 'Authorization: Bearer ci-forwarded-secret-9q' -H 'Content-Type: application/json' \
    --data '{"query":"{ topProducts { name } }"}' "$base/graphql" || true
done
curl -fsS -H 'Accept: application/json' "$base/debug/transport" >"$work/status.json"
open_page status "$base/debug/transport" 5000 'id="schemas"' 'class="schema"' 'class="route"' 'class="address"' 'canary_start'
for secret in ci-url-pa55word ci-set-token-2b7 ci-forwarded-secret-9q; do
  if grep -q "$secret" "$work/status.json" "$work/status.dom.html"; then
    echo "the status page shows secret $secret"; exit 1
  fi
done
echo "screenshots (what a person sees): $(ls "$shots"/*.png | tr '\n' ' ')"
