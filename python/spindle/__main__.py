"""python3 -m spindle MODULE:CALLABLE [flags]: serves a WSGI or ASGI application
(detected; --interface forces it). MODULE:factory() calls a factory.

The flags are the spindle binary's (--bind, --workers, timeouts, limits...)
plus the WSGI ones (--preload, --root-path, --max-concurrent-app-calls), all
parsed from the one flag table in C; --help lists them all."""

import sys

# The import itself lives in _load.py (spindle.run imports load from here).
from ._load import load  # noqa: F401


def main(argv):
    from . import _spindle, serve_argv
    if not argv or argv[0] in ("-h", "--help"):
        # The usage line, the WSGI flags and the shared ones: all from the
        # flag table on the C side.
        _spindle.serve(["--help"], None, prog="python3 -m spindle")
        return 0 if argv else 2
    if argv[0] == "--version":
        return _spindle.serve(["--version"], None)
    spec, rest = argv[0], argv[1:]
    if spec.startswith("-") or ":" not in spec and "." not in spec and not spec.isidentifier():
        sys.stderr.write("spindle: the first argument names the application as "
                         "MODULE:CALLABLE (e.g. app:application)\n")
        return 2

    def loader():
        return load(spec)
    loader.spec = spec  # named in the message when --preload cannot import it

    # Every flag, --preload, --root-path, --max-concurrent-app-calls and
    # --chdir included, is parsed on the C side (one table for both commands).
    return serve_argv(rest, loader)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
