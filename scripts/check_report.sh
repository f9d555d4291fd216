#!/usr/bin/env bash
# Loads a gpuq report.html in headless Chromium, lets its inline script draw, and reads the result
# back from the DOM: exit 0 with "report renders: N charts", or exit 1 with the page's error.
# Usage: scripts/check_report.sh REPORT.html   (Chromium: scripts/deps.sh installs it)
set -euo pipefail

if [[ $# -ne 1 || ! -f $1 ]]; then
  echo "usage: $0 REPORT.html (an existing file)" >&2
  exit 2
fi
chromium=$(command -v chromium || true)
if [[ -z $chromium ]]; then
  echo "check_report: chromium is not on PATH; scripts/deps.sh installs it" >&2
  exit 1
fi

file=$(realpath "$1")
url="file://$(sed 's/%/%25/g; s/ /%20/g; s/#/%23/g; s/?/%3F/g' <<<"$file")"
# A fresh profile per run, so parallel checks do not share (and lock) one.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpuq-check-report.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

status=0
dom=$(timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
  --no-first-run --virtual-time-budget=5000 --user-data-dir="$tmp/profile" --dump-dom "$url" \
  2>/dev/null) || status=$?
if [[ $status -ne 0 ]]; then
  echo "check_report: chromium exited $status on $file (124: timed out after 60 s)" >&2
  exit 1
fi

body=$(grep -o '<body[^>]*>' <<<"$dom" | head -n 1 || true)
rendered=$(sed -n 's/.*data-rendered="\([^"]*\)".*/\1/p' <<<"$body")
charts=$(sed -n 's/.*data-charts="\([^"]*\)".*/\1/p' <<<"$body")

if [[ $rendered == ok && $charts =~ ^[1-9][0-9]*$ ]]; then
  echo "report renders: $charts charts"
  exit 0
fi
case "$rendered" in
  error)
    message=$(perl -0777 -ne 'if (/<div id="gpuq-error"[^>]*>(.*?)<\/div>/s) {
      $m = $1; $m =~ s/&lt;/</g; $m =~ s/&gt;/>/g; $m =~ s/&quot;/"/g; $m =~ s/&amp;/&/g; print $m }' \
      <<<"$dom")
    echo "check_report: $file failed to draw after ${charts:-0} charts: $message" >&2 ;;
  pending)
    echo "check_report: $file: the report's script did not run (data-rendered=pending)" >&2 ;;
  ok)
    echo "check_report: $file: rendered but drew no charts (data-charts=\"$charts\")" >&2 ;;
  *)
    echo "check_report: $file is not a gpuq report (no data-rendered on <body>)" >&2 ;;
esac
exit 1
