"""Whole flag names only (the user report): a prefix is no flag (--max was
--max-requests), a value flag never swallows the next flag (--access-log
--check-config served, logging to a file named --check-config), and
uvicorn's and gunicorn's spellings are mapped (--host/--port, -b, -w, -h)
or answered with spindle's way (--ws, --http), on the binary and on
python3 -m spindle, which share the parser."""
import http.client
import re
import subprocess

from lib.proctools import ServerProcess, children, connect_probe, free_port, wait_for
from lib.wsgiutil import APPS, BIN, PY, ROOT, env_for


def run_bin(*args, cwd=None, timeout=10):
    return subprocess.run([BIN] + list(args), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, cwd=cwd)


def run_py(*args, cwd=APPS, timeout=20):
    return subprocess.run([PY, "-m", "spindle"] + list(args), capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, cwd=str(cwd), env=env_for())


def get(port, path="/"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def serving(argv, port, tmp_path, workers=None, cwd=None, env=None):
    """Starts argv, waits for port to answer (and for its workers); the
    ServerProcess, to stop."""
    s = ServerProcess(argv, stderr_path=tmp_path / "stderr", env=env, cwd=cwd)
    s.close_files()
    try:
        s.wait_until(lambda: connect_probe(("127.0.0.1", port), 0.5), 15, error=AssertionError)
    except AssertionError:
        s.stop()
        raise AssertionError("%r did not listen:\n%s" % (argv, s.stderr()))
    if workers:
        wait_for(lambda: len(children(s.pid)) >= workers or not s.alive(), 10)
    return s


def test_max_is_no_prefix_of_max_requests():
    p = run_bin("--max", "5", "--print-config")
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert p.stderr.startswith("spindle: unknown flag --max; did you mean --max-requests, "), p.stderr
    assert "spindle: spindle --help lists the flags" in p.stderr
    assert "max-requests" not in p.stdout  # the hint is not applied


def test_ws_websockets_is_answered_not_ws_ping_interval():
    p = run_bin("--ws", "websockets")
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("spindle: --ws (uvicorn): spindle speaks WebSocket itself, in C: "
                               "there is no library to choose"), p.stderr
    assert "--ws-ping-interval" in p.stderr and "wants seconds" not in p.stderr


def test_http_h11_is_answered_not_http2():
    p = run_bin("--http", "h11")
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("spindle: --http (uvicorn): spindle parses HTTP/1.1 itself"), p.stderr
    assert "--http2 is on or off" not in p.stderr


def test_access_log_never_swallows_check_config(tmp_path):
    p = run_bin("--access-log", "--check-config", "--bind", "127.0.0.1:%d" % free_port(),
                "--workers", "1", cwd=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr == ("spindle: --access-log needs a value (FILE), not the flag --check-config "
                        "after it; a value that begins with - is written "
                        "--access-log=--check-config\n"), p.stderr
    assert not (tmp_path / "--check-config").exists()
    assert "listening" not in p.stderr


def test_a_missing_value_at_the_end_and_an_unknown_flag_exit_2():
    p = run_bin("--workers")
    assert p.returncode == 2 and p.stderr == "spindle: --workers needs a value (N)\n", p.stderr
    p = run_bin("--zzqqxxyy")
    assert p.returncode == 2, p.stderr
    assert p.stderr == "spindle: unknown flag --zzqqxxyy\nspindle: spindle --help lists the flags\n"


def test_uvicorns_host_and_port_serve(tmp_path):
    port = free_port()
    s = serving([BIN, "--host", "127.0.0.1", "--port", str(port), "--workers", "1"], port,
                tmp_path, workers=1)
    try:
        assert get(port) == (200, b"Hello world!")
    finally:
        s.stop()


def test_gunicorns_bind_and_workers_serve(tmp_path):
    port = free_port()
    s = serving([BIN, "-b", "127.0.0.1:%d" % port, "-w", "1"], port, tmp_path, workers=1)
    try:
        assert get(port) == (200, b"Hello world!")
        assert len(children(s.pid)) == 1  # -w 1, not one per CPU
    finally:
        s.stop()


def test_dash_h_is_help():
    p = run_bin("-h")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage: spindle"), p.stdout[:200]
    assert "also -b ADDR (gunicorn)" in p.stdout


def test_help_lists_every_alias_of_the_table_next_to_its_flag():
    """Each mapped alias of src/cli/aliases.c on an "also" line under its
    flag's row; each answered one in the closing list."""
    src = (ROOT / "src" / "cli" / "aliases.c").read_text()
    rows = re.findall(r'\{"(-[a-z-_]+)", (?:"[A-Z]+"|NULL), (AL_\w+), (?:"([a-z0-9-]+)"|NULL)', src)
    assert len(rows) > 30
    out = run_bin("--help").stdout
    blocks = re.split(r"\n(?=  --)", out)  # one block per flag row
    answered = out[out.index("answered with"):].split()
    for name, kind, to in rows:
        if kind == "AL_ANSWER":
            assert name in answered, name
            continue
        block = next(b for b in blocks if b.startswith("  --%s " % to) or b.startswith("  --%s\n" % to))
        assert re.search(r"also %s\b" % re.escape(name), block), (name, block)


def test_python_command_refuses_a_prefix_and_names_its_help():
    p = run_py("count_app:application", "--max", "5")
    assert p.returncode == 2, p.stderr
    assert "spindle: unknown flag --max; did you mean --max-requests, " in p.stderr, p.stderr
    assert "spindle: python3 -m spindle --help lists the flags" in p.stderr


def test_python_command_access_log_never_swallows_check_config(tmp_path):
    p = run_py("count_app:application", "--access-log", "--check-config", "--chdir", str(APPS),
               cwd=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "spindle: --access-log needs a value (FILE), not the flag --check-config" in p.stderr
    assert not (tmp_path / "--check-config").exists()


def test_python_command_serves_on_host_and_port(tmp_path):
    port = free_port()
    s = serving([PY, "-m", "spindle", "count_app:application", "--host", "127.0.0.1", "--port",
                 str(port), "-w", "1"], port, tmp_path, workers=1, cwd=str(APPS), env=env_for())
    try:
        assert get(port) == (200, b"called")
    finally:
        s.stop()


def test_python_command_dash_h_after_the_application_is_help():
    p = run_py("count_app:application", "-h")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage: python3 -m spindle MODULE:CALLABLE"), p.stdout[:200]


def test_a_python_app_given_to_the_c_binary_says_how_to_serve_it():
    """The pip command and the C binary share a name: a user whose PATH found
    the binary is told how to serve MODULE:APP, not 'unexpected argument'."""
    p = subprocess.run([BIN, "app:app"], capture_output=True, text=True, timeout=10)
    assert p.returncode == 2
    assert "looks like a Python application" in p.stderr and "python3 -m spindle app:app" in p.stderr, p.stderr
