#!/usr/bin/env bash
# Builds asmjit as a position-independent static library from Debian's source package and
# installs it under third_party/asmjit/install (ignored by git). Idempotent.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prefix="$here/asmjit/install"
if [ -f "$prefix/lib/libasmjit.a" ] && [ -f "$prefix/include/asmjit/asmjit.h" ]; then exit 0; fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
if ! grep -rqs "deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/; then
  $SUDO tee /etc/apt/sources.list.d/pijit-deb-src.sources >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  $SUDO apt-get update -qq
fi
work="$here/asmjit/src"
rm -rf "$work"; mkdir -p "$work"
(cd "$work" && apt-get source -qq asmjit >/dev/null)
srcdir="$(find "$work" -maxdepth 1 -mindepth 1 -type d -name 'asmjit*' | head -n1)"
cmake -S "$srcdir" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DASMJIT_STATIC=ON -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DASMJIT_TEST=OFF \
  -DCMAKE_INSTALL_PREFIX="$prefix" >/dev/null
cmake --build "$work/build" -j2 >/dev/null
cmake --install "$work/build" >/dev/null
rm -rf "$work"
