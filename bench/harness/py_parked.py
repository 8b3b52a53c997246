"""py_parked.py — the parked workload's Python row: WebSockets parked in a
WSGI handler's `spindle.websocket` receive (bench/wsgi_apps/parked_py.py,
one worker, 10 warm-up connections first), the worker's RSS per WebSocket.
Issue 34 judges it (≤ 12 KB); the idle ASGI WebSockets are the asgi workload's."""
import json
import os
import subprocess

from . import peers


def row(ctx, count):
    """The row for COUNT parked WebSockets, or None (a problem noted)."""
    script = os.path.join(peers.BENCH, "wsgi_apps", "parked_py.py")
    env = dict(os.environ, SPINDLE_PY=ctx.spindle_py)
    argv = [peers.PY, script, str(count), "ws", "--json"]  # memory, not time: no pinning needed
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=300)
    except subprocess.TimeoutExpired:
        ctx.problem("parked: bench/wsgi_apps/parked_py.py took over 300 s")
        return None
    lines = [x for x in r.stdout.decode(errors="replace").splitlines() if x.startswith("{")]
    if r.returncode != 0 or not lines:
        ctx.problem("parked: bench/wsgi_apps/parked_py.py failed: %s" % r.stderr.decode(errors="replace")[-300:])
        return None
    res = json.loads(lines[-1])
    return {"workload": "parked", "variant": "%d WebSockets, WSGI spindle.websocket" % res["parked"],
            "app": "parked_app", "server": "spindle", "workers": 1, "round": 1, "connections": count,
            "held_open": res["parked"], "client_errors": count - res["parked"],
            "rss_kb_before": res["rss_before"] // 1024, "rss_kb_after": res["rss_after"] // 1024,
            "bytes_per_connection": round(res["bytes_each"]), "broadcasts": "", "delivered_to_all": ""}
