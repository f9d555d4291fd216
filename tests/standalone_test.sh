#!/usr/bin/env bash
# The project stands on its own: no file names a path outside the repository (the design notes
# and traces in the folder beside the developers' checkout are not in a user's clone), and the
# published traces the tests and benches read are in data/traces, each folder with its README
# (source, licence) and the licence file where one was published.
set -u
root=$1
cd "$root" || exit 2
fail=0
# Sources, scripts and docs; not build trees or Go's module cache. The pattern is put together
# here so that this file does not name what it looks for.
up='\.\.'
hits=$(grep -rIlE "$up/shared|shared/(DESIGN|SCENARIOS|CONVENTIONS|traces)" . \
  --exclude-dir=.git --exclude-dir='build*' --exclude-dir=node_modules --exclude-dir=.cache 2>/dev/null)
if [ -n "$hits" ]; then
  echo "FAIL: these files point outside the repository (the developers' notes beside a checkout):"
  echo "$hits" | sed 's/^/  /'; fail=1
fi
for t in alibaba-gpu-v2023 gavel-philly-vc tiresias-sample; do
  [ -s "data/traces/$t/README.md" ] || { echo "FAIL: data/traces/$t has no README.md (source, licence)"; fail=1; }
done
for lic in gavel-philly-vc/LICENSE tiresias-sample/LICENSE; do
  [ -s "data/traces/$lic" ] || { echo "FAIL: data/traces/$lic is missing"; fail=1; }
done
[ $fail -eq 0 ] && echo "ok: no path outside the repository; data/traces complete"
exit $fail
