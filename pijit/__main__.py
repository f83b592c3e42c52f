"""python -m pijit script.py [args]: runs an unchanged script with every frame captured."""
import runpy
import sys

import pijit


def main():
    if len(sys.argv) < 2:
        print("usage: python -m pijit script.py [args...]", file=sys.stderr)
        return 2
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    pijit.enable()
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        pijit.disable()
    return 0


if __name__ == "__main__":
    sys.exit(main())
