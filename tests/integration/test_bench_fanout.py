"""bench/run's fanout workload end to end, tiny: 40 WebSocket subscribers
over two spindle instances (the C handler and the ASGI app) on a fresh
redis-server, the closed loop and one open-loop step; every message reaches
every subscriber and fanout.csv and bench.md carry the figures."""
import csv
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
RUN = os.path.join(ROOT, "bench", "run")
FANOUT = os.path.join(ROOT, "build", "bench", "fanout")


@pytest.mark.skipif(not shutil.which("redis-server") or not os.access(FANOUT, os.X_OK),
                    reason="needs redis-server and build/bench/fanout (make)")
def test_fanout_workload_runs_end_to_end(tmp_path):
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, RUN, "--smoke", "--no-install", "--workloads", "fanout",
                        "--fanout-systems", "spindle-c,spindle", "--fanout-subscribers", "40",
                        "--fanout-instances", "2", "--fanout-seconds", "1", "--fanout-step", "0.5",
                        "--fanout-ladder", "1", "--out", str(out)],
                       capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    with open(out / "fanout.csv") as f:
        rows = list(csv.DictReader(f))
    for system in ("spindle-c", "spindle"):
        mine = [x for x in rows if x["server"] == system]
        assert [x["variant"] for x in mine][:2] == ["closed loop", "open ×1"], (system, mine)
        closed = mine[0]
        assert int(closed["held_open"]) == 40 and int(closed["lost"]) == 0, closed
        assert int(closed["published"]) > 0 and int(closed["delivered"]) == int(closed["expected"]), closed
        assert float(closed["deliveries_per_s"]) > 0 and float(closed["p99_ms"]) > 0, closed
    md = (out / "bench.md").read_text()
    assert "## Fan-out" in md and "| spindle-c | 40 |" in md, md[-2000:]
