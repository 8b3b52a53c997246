"""python3 -m spindle MODULE:CALLABLE [flags]: serves a WSGI application.

The flags are the spindle binary's (--bind, --workers, timeouts, limits...)
plus the WSGI ones below; --help lists them all."""

import importlib
import os
import sys

WSGI_FLAGS = """WSGI options:
  --preload                    import the application once in the master, before the workers
                               fork (default: each worker imports it after the fork)
  --root-path PATH             SCRIPT_NAME: the URL prefix the application is mounted at
                               (default empty)
  --max-concurrent-app-calls N requests inside the application at once per worker; more
                               wait their turn (default no limit)
  --chdir DIR                  change to DIR before importing the application
"""

USAGE = "usage: python3 -m spindle MODULE:CALLABLE [--bind ADDR]... [options]\n"


def load(spec):
    """Imports MODULE and returns CALLABLE from it (default: application)."""
    module_name, _, attr = spec.partition(":")
    attr = attr or "application"
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    module = importlib.import_module(module_name)
    obj = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(USAGE + "\n" + WSGI_FLAGS + "\n")
        sys.stdout.flush()
        from . import _spindle
        _spindle.serve(["--help"], None, prog="python3 -m spindle")
        return 0 if argv else 2
    if argv[0] == "--version":
        from . import _spindle
        return _spindle.serve(["--version"], None)
    spec, rest = argv[0], argv[1:]
    if spec.startswith("-") or ":" not in spec and "." not in spec and not spec.isidentifier():
        sys.stderr.write("spindle: the first argument names the application as "
                         "MODULE:CALLABLE (e.g. app:application)\n")
        return 2
    preload = False
    root_path = ""
    max_calls = 0
    passed = []
    i = 0
    while i < len(rest):
        a = rest[i]
        name, eq, value = a.partition("=")
        takes = name in ("--root-path", "--max-concurrent-app-calls", "--chdir")
        if name == "--preload":
            preload = True
        elif takes:
            if not eq:
                if i + 1 >= len(rest):
                    sys.stderr.write("spindle: %s needs a value\n" % name)
                    return 2
                i += 1
                value = rest[i]
            if name == "--root-path":
                root_path = value.rstrip("/")
            elif name == "--chdir":
                os.chdir(value)
            else:
                try:
                    max_calls = int(value)
                    if max_calls < 1:
                        raise ValueError
                except ValueError:
                    sys.stderr.write("spindle: --max-concurrent-app-calls wants a positive "
                                     "whole number, not %r\n" % value)
                    return 2
        else:
            passed.append(a)
        i += 1

    from . import serve_argv

    def loader():
        return load(spec)

    app = None
    if preload:
        try:
            app = load(spec)
        except Exception as e:
            sys.stderr.write("spindle: cannot load %s: %s: %s\n" % (spec, type(e).__name__, e))
            return 1
    return serve_argv(passed, loader, app=app, root_path=root_path,
                      max_concurrent_app_calls=max_calls)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
