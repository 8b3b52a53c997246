"""The `spindle` command line: --help lists every flag (the flag table in
src/ and the ones the issue names), --version, and bad flags exit
with status 2 and a message that names the flag."""
import os
import re
import socket
import subprocess

import pytest

from lib.server import BIN, ROOT

REQUIRED = ["--bind", "--header-timeout", "--body-timeout", "--send-timeout",
            "--keepalive-timeout", "--linger-timeout", "--max-connections", "--backlog",
            "--max-head-size", "--max-header-count", "--max-target-length",
            "--max-body-size", "--drain-limit", "--pipeline-burst", "--stack-size",
            "--forwarded-allow-ips", "--log-level", "--help", "--version"]


def run(*args, timeout=10):
    return subprocess.run([BIN] + list(args), capture_output=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def _table_flags(role=None):
    """The flag table's names, wherever in src/ it lives ({"name", ARG, K_...,
    ROLE, ...}); with role, only the rows that command takes (ROLE_BIN or
    ROLE_PY; the B rows are both's)."""
    names = []
    for f in sorted((ROOT / "src").rglob("*.c")):
        rows = re.findall(r'\{\s*"([a-z0-9-]+)",\s*(?:"[A-Z.]+"|NULL),\s*K_\w+,\s*(\w+)',
                          f.read_text())
        names += [n for n, r in rows if role is None or r in (role, "B", "ROLE_BOTH")]
    return ["--" + n for n in names]


def test_help_lists_every_flag():
    p = run("--help")
    assert p.returncode == 0
    out = p.stdout.decode()
    assert out.startswith("usage: spindle")
    flags = set(re.findall(r"^\s+(--[a-z0-9-]+)", out, re.M))
    table = _table_flags("ROLE_BIN")
    assert len(table) > 30 and len(_table_flags()) > len(table)
    for f in REQUIRED + table:
        assert f in flags, "%s missing from --help" % f
    # each flag's line says what it does, with its default where it has one
    for line in out.splitlines():
        if re.match(r"^\s+--", line):
            assert len(line.split(None, 2)) >= 2, line


def test_version():
    p = run("--version")
    assert p.returncode == 0
    assert p.stdout.startswith(b"spindle ")


@pytest.mark.parametrize("args,needle", [
    (["--no-such-flag"], "--no-such-flag"),
    (["--header-timeout", "abc"], "--header-timeout"),
    (["--header-timeout", "-1"], "--header-timeout"),
    (["--body-timeout", "1x"], "--body-timeout"),
    (["--send-timeout", ""], "--send-timeout"),
    (["--keepalive-timeout", "nan?"], "--keepalive-timeout"),
    (["--max-connections", "0"], "--max-connections"),
    (["--max-connections", "many"], "--max-connections"),
    (["--max-head-size", "12q"], "--max-head-size"),
    (["--max-body-size", "-5"], "--max-body-size"),
    (["--drain-limit", "lots"], "--drain-limit"),
    (["--pipeline-burst", "0"], "--pipeline-burst"),
    (["--log-level", "loud"], "--log-level"),
    (["--header-timeout"], "header-timeout"),  # missing argument
    (["stray-argument"], "stray-argument"),
])
def test_bad_flags_exit_2_naming_the_flag(args, needle):
    p = run(*args)
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 2, (p.returncode, err)
    assert needle in err, err


def test_bad_bind_address_fails_naming_it():
    p = run("--bind", "127.0.0.1:notaport")
    err = p.stderr.decode(errors="replace")
    assert p.returncode in (1, 2), (p.returncode, err)
    assert "127.0.0.1:notaport" in err, err


def test_port_in_use_fails_fast():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    try:
        addr = "127.0.0.1:%d" % s.getsockname()[1]
        p = run("--bind", addr)
        err = p.stderr.decode(errors="replace")
        assert p.returncode == 1, (p.returncode, err)
        assert addr in err, err
    finally:
        s.close()


@pytest.mark.parametrize("args", [["--preload"], ["--root-path", "/x"],
                                  ["--max-concurrent-app-calls", "2"]])
def test_python_flags_are_refused_naming_the_flag(args):
    p = run(*args)
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 2, (p.returncode, err)
    assert "spindle: %s applies to python3 -m spindle only" % args[0] in err, err


def test_python_rows_in_a_file_or_the_environment_are_skipped_with_a_warning(tmp_path):
    """A config file shared by both commands may hold the other's rows: a
    warning names each, the rest applies."""
    conf = tmp_path / "shared.conf"
    conf.write_text("preload = true\nworkers = 3\n")
    env = dict(os.environ, SPINDLE_ROOT_PATH="/x")
    p = subprocess.run([BIN, "--config", str(conf), "--print-config"], capture_output=True,
                       timeout=10, stdin=subprocess.DEVNULL, env=env)
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 0, err
    assert "%s:1: preload applies to python3 -m spindle only; skipped" % conf in err, err
    assert "SPINDLE_ROOT_PATH: root-path applies to python3 -m spindle only; skipped" in err, err
    assert "workers = 3  # config file" in out
    assert "preload" not in out and "root-path" not in out
