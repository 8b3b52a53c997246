#!/usr/bin/python3
"""Instructions per WSGI hello-world request with CONC keep-alive clients:
the harness's method (bench/harness/load.py, instructions: callgrind on
every process, ab -k -c CONC with N1 then N2 requests, the difference per
request), with the concurrency bench/run fixes at 10 left free — one
client at a time is issue 23's other case. Needs build/python (make).

usage: PYTHONHASHSEED=0 bench/wsgi_apps/ir_clients.py [CONC=1] [N1=500] [N2=2500] [APP=hello:application]"""
import os
import sys

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, BENCH)
from harness import load, peers, procs  # noqa: E402


def main():
    conc, n1, n2 = (int(a) for a in (sys.argv[1:4] + ["1", "500", "2500"][len(sys.argv) - 1:]))
    app = sys.argv[4] if len(sys.argv) > 4 else "hello:application"
    py_path = os.path.join(os.path.dirname(BENCH), "build", "python")

    def make_server(prefix, workdir):
        port = procs.free_port()
        argv = [peers.PY, "-m", "spindle", app, "--chdir", peers.WSGI_APPS, "--bind",
                "127.0.0.1:%d" % port, "--workers", "1", "--log-level", "warning",
                "--max-connections", "15000", "--keepalive-timeout", "120"]
        return procs.Server("spindle", prefix + argv, port, [0], workdir,
                            env={"PYTHONPATH": py_path}).start()

    res = load.instructions(make_server, n1, n2, [1], conc=conc)
    print("ab -k -c %d, %d then %d requests: %.1f instructions per request"
          % (conc, n1, n2, res["instructions_per_request"]))
    for ir, share, fn in res["functions"][:25]:
        print("%10.1f %5.1f%%  %s" % (ir, share, fn))


if __name__ == "__main__":
    main()
