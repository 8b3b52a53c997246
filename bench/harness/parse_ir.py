"""parse_ir.py — the instructions workload's parser row: the head parser's
cost on the 15-field browser request (bench/parse.c), exact, from callgrind
run twice with different iteration counts, (Ir(N2) - Ir(N1)) / (N2 - N1).
Issue 34 judges it (< 1,000); bench/README.md's parse section has the method."""
import os
import subprocess

from . import peers
from .load import callgrind_total

N1, N2 = 1000, 11000


def row(ctx):
    """The parser's row, or None (a problem noted) without build/bench/parse."""
    exe = os.path.join(peers.ROOT, "build", "bench", "parse")
    if not os.access(exe, os.X_OK):
        ctx.problem("instructions: build/bench/parse not built (make): no parser row")
        return None
    totals = []
    for n in (N1, N2):
        out = os.path.join(ctx.tmp, "parse.callgrind.%d" % n)
        r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, exe, str(n), "browser"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
        if r.returncode != 0 or not os.path.exists(out):
            ctx.problem("instructions: callgrind of build/bench/parse failed: %s" % r.stderr.decode()[-300:])
            return None
        totals.append(callgrind_total([out]))
    return {"workload": "instructions", "variant": "parse: 15-field request", "app": "parser",
            "server": "spindle-c", "workers": 1, "connections": 0, "round": 1, "requests": N2 - N1,
            "ir_n1": totals[0], "ir_n2": totals[1],
            "instructions_per_request": round((totals[1] - totals[0]) / (N2 - N1), 1)}
