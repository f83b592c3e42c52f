#!/usr/bin/env bash
# oneDNN 3.x from PyPI's wheels (Intel's builds: the library with GNU OpenMP, and its headers
# and CMake package), unpacked under third_party/onednn/install (ignored by git). Debian
# bookworm packages oneDNN 2.6, which has no brgemm-based convolutions for AVX2 (20-40% slower
# on ResNet's 3x3 layers: benchmarks/onednn_conv.cc). Idempotent.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prefix="$here/onednn/install"
version="2023.2.0"  # oneDNN 3.2
if [ -f "$prefix/lib/libdnnl.so.3" ] && [ -f "$prefix/include/oneapi/dnnl/dnnl.hpp" ] &&
   [ -f "$prefix/lib/cmake/dnnl/dnnl-config.cmake" ]; then exit 0; fi
PY="${PYTHON:-python3}"
work="$here/onednn/download"
rm -rf "$work" "$prefix"; mkdir -p "$work" "$prefix"
"$PY" -m pip download -q --disable-pip-version-check --no-deps -d "$work" \
  "onednn-cpu-gomp==$version" "onednn-devel-cpu-gomp==$version"
for wheel in "$work"/*.whl; do
  (cd "$work" && "$PY" -m zipfile -e "$wheel" unpacked)
done
# Each wheel keeps its files under <name>.data/data/{include,lib}: one prefix for both.
for data in "$work"/unpacked/*.data/data; do cp -a "$data"/. "$prefix"/; done
# Zip archives hold the library's links as copies: links again.
(cd "$prefix/lib" && ln -sf libdnnl.so.3.2 libdnnl.so.3 && ln -sf libdnnl.so.3 libdnnl.so)
rm -rf "$work"
