#!/usr/bin/env bash
# The Debian package (packaging/): `cmake --build BUILD --target package` makes
# gpuq_VERSION_ARCH.deb; it holds what packaging/README.md lists, lintian finds no error in it,
# and it installs with apt into a fresh Debian 12 root (debootstrap's minbase, in a chroot: no
# container), which pulls in the dependencies it names; the installed gpuq answers --version,
# the installed gpuqd checks the packaged example configuration, and the man pages render.
#
# Needs root (chroot) and Debian's archive (debootstrap, apt). The minbase root is made once and
# kept as a tarball, and the packages apt fetched into it are kept too, under $GPUQ_TEST_CACHE
# (default /var/cache/gpuq-test), so a later run downloads nothing; each run installs into a new
# copy of the root.
#
# Usage: package_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
cache=${GPUQ_TEST_CACHE:-/var/cache/gpuq-test}
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "needs root (chroot into a fresh root); scripts/test.sh runs as root in CI"

echo "== cmake --build $build --target package"
rm -f "$build"/gpuq_*.deb
cmake --build "$build" --target package >"$build/package_test.log" 2>&1 || { tail -30 "$build/package_test.log"; fail "the package target failed"; }
deb=$(ls "$build"/gpuq_*_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "no gpuq_VERSION_ARCH.deb in $build"
version=$(dpkg-deb -f "$deb" Version)
arch=$(dpkg-deb -f "$deb" Architecture)
[ "$(basename "$deb")" = "gpuq_${version}_${arch}.deb" ] || fail "$(basename "$deb") is not gpuq_${version}_${arch}.deb"
echo "package: $(basename "$deb"), $(stat -c %s "$deb") bytes"
echo "Depends: $(dpkg-deb -f "$deb" Depends)"
dpkg-deb -f "$deb" Depends | grep -q libgrpc || fail "Depends names no gRPC library (dpkg-shlibdeps?)"

contents=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')
for f in /usr/bin/gpuq /usr/bin/gpuq-full /usr/sbin/gpuqd /usr/libexec/gpuq/gpuq-shim \
         /usr/lib/systemd/system/gpuqd.service /usr/share/doc/gpuq/examples/gpuqd.yaml \
         /usr/share/doc/gpuq/copyright /usr/share/doc/gpuq/changelog.gz \
         /usr/share/man/man1/gpuq.1.gz /usr/share/man/man1/gpuq-full.1.gz /usr/share/man/man8/gpuqd.8.gz /usr/share/man/man5/gpuqd.yaml.5.gz \
         /usr/share/bash-completion/completions/gpuq /usr/share/zsh/vendor-completions/_gpuq; do
  grep -qxF "$f" <<<"$contents" || fail "the package has no $f"
done
if grep -q '^/etc/' <<<"$contents"; then fail "the package installs into /etc (the unit is configured by hand)"; fi
echo "ok: the package holds the programs, the unit, the example, the man pages and the completions"

echo "== lintian"
lintian --fail-on error "$deb" >"$build/lintian.log" 2>&1 || { cat "$build/lintian.log"; fail "lintian reports errors"; }
grep -v "running with root privileges" "$build/lintian.log" || true  # its warnings, if any
echo "ok: lintian reports no error"

echo "== a fresh Debian 12 root"
mkdir -p "$cache/archives"
base="$cache/bookworm-minbase.tar"
if [ ! -s "$base" ]; then
  command -v debootstrap >/dev/null || fail "no debootstrap (scripts/deps.sh installs it)"
  tmp=$(mktemp -d)
  mirror=$(awk '/^URIs:/ && $2 ~ /\/debian$/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  debootstrap --variant=minbase bookworm "$tmp/root" "${mirror:-http://deb.debian.org/debian}" >"$build/debootstrap.log" 2>&1 ||
    { tail -20 "$build/debootstrap.log"; rm -rf "$tmp"; fail "debootstrap failed"; }
  tar -C "$tmp/root" -cf "$base.new" . && mv "$base.new" "$base"
  rm -rf "$tmp"
fi
root=$(mktemp -d /tmp/gpuq-package-root.XXXXXX)
cleanup() { umount "$root/proc" 2>/dev/null || true; rm -rf --one-file-system "$root"; }
trap cleanup EXIT
tar -C "$root" -xf "$base"
# /proc, as on a machine: gpuq finds gpuq-full beside itself through /proc/self/exe.
mount -t proc proc "$root/proc" || fail "cannot mount /proc in the fresh root"
# The same archive as this machine (with its security and updates suites: the package's
# versioned dependencies come from them), and its name server.
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
  rm -f "$root/etc/apt/sources.list"
fi
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
cp "$cache/archives/"*.deb "$root/var/cache/apt/archives/" 2>/dev/null || true
cp "$deb" "$root/tmp/"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
in_root apt-get update -qq >"$build/package_apt.log" 2>&1 || { tail -20 "$build/package_apt.log"; fail "apt-get update in the fresh root failed"; }
DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -q --no-install-recommends "/tmp/$(basename "$deb")" \
  >>"$build/package_apt.log" 2>&1 || { tail -30 "$build/package_apt.log"; fail "apt-get install of the package failed"; }
cp -n "$root/var/cache/apt/archives/"*.deb "$cache/archives/" 2>/dev/null || true
echo "ok: installed with $(grep -c '^Unpacking' "$build/package_apt.log") package(s) unpacked"

out=$(in_root gpuq --version) || fail "gpuq --version failed in the fresh root"
[ "$out" = "gpuq $version" ] || fail "gpuq --version says \"$out\", not \"gpuq $version\""
out=$(in_root gpuqd --version) || fail "gpuqd --version failed in the fresh root"
[ "$out" = "gpuqd $version" ] || fail "gpuqd --version says \"$out\""
in_root gpuqd --check-config --config /usr/share/doc/gpuq/examples/gpuqd.yaml ||
  fail "the installed gpuqd refuses the packaged example configuration"
printf 'binder: local\nlocal: {gpus: 99999}\n' >"$root/tmp/bad.yaml"
if err=$(in_root gpuqd --check-config --config /tmp/bad.yaml 2>&1); then fail "gpuqd accepted gpus: 99999"; fi
grep -q "local.gpus" <<<"$err" || fail "gpuqd's error names no key: $err"
# gpuq (the quick one) runs gpuq-full for what it does not do itself: a simulation.
in_root gpuq sim scenario /usr/share/doc/gpuq/examples/scenarios/cohort-borrowing.yaml >/dev/null ||
  fail "gpuq sim scenario (through gpuq-full) failed in the fresh root"
[ -x "$root/usr/libexec/gpuq/gpuq-shim" ] || fail "no gpuq-shim"
# The quick gpuq loads no gRPC (60 libraries and their initialisers: about 7 ms more a start,
# bench/start_cost.py); only gpuq-full does.
if readelf -d "$root/usr/bin/gpuq" | grep -q "NEEDED.*libgrpc"; then fail "the packaged gpuq needs libgrpc"; fi
readelf -d "$root/usr/bin/gpuq-full" | grep -q "NEEDED.*libgrpc" || fail "the packaged gpuq-full needs no libgrpc?"
[ -z "$(find "$root/etc/systemd" -name gpuqd.service 2>/dev/null)" ] || fail "the unit is enabled on install"
echo "ok: gpuq --version, gpuqd --version, gpuqd --check-config and gpuq sim run in the fresh root"

echo "== the man pages"
for page in man1/gpuq.1 man8/gpuqd.8 man5/gpuqd.yaml.5; do
  # groff's warnings, but those about fitting text to 80 columns (a wide table, a line it cannot
  # justify): an undefined macro or a bad escape is a page that renders wrong.
  warn=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$root/usr/share/man/$page.gz" 2>&1 >/dev/null |
    grep -v -e "cannot adjust line" -e "table wider than line width" -e "^warning: file '<standard input>', around line" || true)
  [ -z "$warn" ] || fail "man -l $page: $warn"
  lines=$(MANWIDTH=80 man -l "$root/usr/share/man/$page.gz" 2>/dev/null | wc -l)
  [ "$lines" -gt 40 ] || fail "man -l $page renders only $lines lines"
  echo "ok: $page renders ($lines lines)"
done
echo "ok: the package"
