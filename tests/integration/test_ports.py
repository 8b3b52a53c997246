"""The tests' own port allocator (lib/ports.py, behind proctools.free_port):
each pytest-xdist worker's range is its own and below the kernel's ephemeral
ports, processes sharing a range never get the same port, a held port is
skipped, and the shell suites' free_port gets a new port on each call."""

import os
import socket
import subprocess
import sys

from lib import ports

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _env(worker, count=8):
    return {"PYTEST_XDIST_WORKER": worker, "PYTEST_XDIST_WORKER_COUNT": str(count)}


def test_worker_ranges_are_disjoint_and_below_the_ephemeral_ports():
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        ephemeral = int(f.read().split()[0])
    for count in (1, 2, 3, 8):
        spans = [ports.port_range(_env("gw%d" % n, count))[:2] for n in range(count)]
        spans.append(ports.port_range({})[:2])  # no xdist: plain pytest, the shell suites
        spans.sort()
        for (a, b), (c, _) in zip(spans, spans[1:]):
            assert a < b <= c, spans
        assert 1024 <= spans[0][0] and spans[-1][1] <= ephemeral, (spans, ephemeral)


def test_a_held_port_is_skipped():
    env = _env("gw6")
    first, end, _ = ports.port_range(env)
    p1 = ports.next_port(env=env)
    held = p1 + 1 if p1 + 1 < end else first
    with socket.socket() as s:
        s.bind(("127.0.0.1", held))
        s.listen(1)
        p2 = ports.next_port(env=env)
    assert p2 != held and first <= p2 < end, (p1, held, p2)


def test_processes_sharing_a_range_never_get_the_same_port():
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from lib.proctools import free_port\n"
            "print(' '.join(str(free_port()) for _ in range(40)))\n" % HERE)
    env = dict(os.environ, **_env("gw7"))
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(4)]
    got = []
    for p in procs:
        out, _ = p.communicate(timeout=30)
        assert p.returncode == 0
        got += [int(x) for x in out.split()]
    first, end, _ = ports.port_range(env)
    assert len(got) == 160 and len(set(got)) == 160, sorted(got)
    assert all(first <= p < end for p in got), (first, end, sorted(got))


def test_the_shell_suites_free_port_differs_on_each_call():
    script = ". tests/suites/lib/preamble.sh; a=$(free_port); b=$(free_port); echo $a $b"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env["SPINDLE_TEST_PYTHON"] = sys.executable
    out = subprocess.run(["bash", "-c", script, os.path.join(ROOT, "tests/suites/x.sh")], env=env,
                         capture_output=True, text=True, timeout=30, cwd=ROOT)
    a, b = (int(x) for x in out.stdout.split())
    first, end, _ = ports.port_range({})
    assert a != b and first <= a < end and first <= b < end, (a, b)
