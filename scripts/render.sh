#!/usr/bin/env bash
# Renders a report page in headless Chromium (Debian's chromium) and checks
# that it is self-contained: nothing on the console, and no request leaving
# the page (every host name resolves to nothing, and Chromium's network log
# must list no request the page initiated: a self-contained file:// page
# makes none).
#
#   scripts/render.sh PAGE.html SCREENSHOT.png [WIDTH,HEIGHT]
#
# Writes the screenshot; exits 1 and says what it saw when the page logged
# to the console or made a request. The README's screenshot of a report
# is taken with this command.
set -euo pipefail
page=$1 shot=$2 size=${3:-1100,2600}
[ -f "$page" ] || { echo "render: $page: no such file" >&2; exit 2; }
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "render: chromium not found (scripts/setup.sh installs it)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$size"
  --user-data-dir="$work/profile" --no-first-run --no-default-browser-check
  --disable-background-networking --disable-component-update --disable-sync
  --disable-default-apps --disable-extensions --no-pings --disable-domain-reliability
  --disable-breakpad --disable-client-side-phishing-detection
  --disable-features=Translate,OptimizationHints,MediaRouter,SpellCheck
  --host-resolver-rules="MAP * ~NOTFOUND"
  --enable-logging=stderr --v=0 --log-net-log="$work/net.json")
abs=$(cd "$(dirname "$page")" && pwd)/$(basename "$page")
timeout 120 "$browser" "${flags[@]}" --screenshot="$shot" "file://$abs" > "$work/out" 2> "$work/err" || {
  echo "render: chromium failed on $page:" >&2; tail -5 "$work/err" >&2; exit 1; }
[ -s "$shot" ] || { echo "render: no screenshot written for $page" >&2; exit 1; }
bad=0
if grep -q ':CONSOLE' "$work/err"; then
  echo "render: $page logged to the console:" >&2
  grep ':CONSOLE' "$work/err" | sed 's/^/  /' >&2
  bad=1
fi
# A request the page made has a document as its initiator; Chromium's own
# (update checks and the like, which the flags above cannot all stop) have
# "not an origin". One event a line in the network log.
page_requests() {
  grep '"url":' "$work/net.json" | grep '"initiator":' | grep -v '"initiator":"not an origin"' |
    grep -o '"url":"[^"]*"' | sort -u || true
}
if [ -f "$work/net.json" ] && [ -n "$(page_requests)" ]; then
  echo "render: $page made requests:" >&2
  page_requests | sed 's/^/  /' >&2
  bad=1
fi
[ -f "$work/net.json" ] || { echo "render: chromium wrote no network log" >&2; bad=1; }
exit $bad
