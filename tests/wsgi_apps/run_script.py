"""spindle.run() from a script: python3 run_script.py PORT."""
import sys

import spindle


def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"served by spindle.run, path " + environ["PATH_INFO"].encode("latin-1")]


if __name__ == "__main__":
    sys.exit(spindle.run(app, bind="127.0.0.1:%s" % sys.argv[1], workers=1,
                         graceful_timeout=3))
