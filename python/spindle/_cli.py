"""The `spindle` console command (setup.py's entry point): `spindle
MODULE:APP [flags]` is `python3 -m spindle MODULE:APP [flags]`, the same
main() and so the same flag table on the C side; no second parser."""

import sys


def main():
    from .__main__ import main as module_main
    return module_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
