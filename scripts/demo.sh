#!/usr/bin/env bash
# Sets up, builds, and runs the quickstart demo.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$here/scripts/install.sh"
"${PYTHON:-python3}" "$here/examples/quickstart.py"
