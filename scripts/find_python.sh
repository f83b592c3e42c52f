#!/usr/bin/env bash
# Prints the path of a working CPython X.Y interpreter (the argument, e.g. 3.12), or fails:
# $PIJIT_PYTHON312-style override first, then pythonX.Y on PATH, then pyenv's installs.
set -uo pipefail
want="$1"
override="PIJIT_PYTHON${want//./}"
candidates=("${!override:-}" "python$want")
if command -v pyenv >/dev/null 2>&1; then
  for d in "$(pyenv root)/versions/$want".*/bin; do candidates+=("$d/python$want"); done
fi
for c in "${candidates[@]}"; do
  [ -n "$c" ] || continue
  # pyenv's shims exist for every installed version but fail for inactive ones: run it.
  if v="$("$c" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" && [ "$v" = "$want" ]; then
    command -v "$c"
    exit 0
  fi
done
exit 1
