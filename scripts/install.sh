#!/usr/bin/env bash
# Sets up a fresh machine (dependencies) and builds and installs pijit in editable mode.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
bash "$here/scripts/setup_deps.sh"
cd "$here"
export CCACHE_BASEDIR="$here"  # cache hits across checkouts in other folders
"$PY" -m pip install -q --disable-pip-version-check --no-build-isolation -e . 2>&1 \
  | grep -v "Running pip as the 'root' user" || true
"$PY" -c "import pijit" # fails loudly if the build did not produce the extension
