"""What the pip-installed package adds, checked quickly on build/python: the
`spindle` command's entry point (spindle._cli:main), spindle.run() given a
"module:attr" string, and the message without greenlet. The wheel itself
(built, installed, served): tests/suites/wheel.sh."""
import subprocess
import sys

from lib.wsgiutil import APPS, PY, env_for, free_port, wsgi_server  # noqa: F401


def py(code, timeout=20):
    return subprocess.run([PY, "-c", code], env=env_for(), cwd=str(APPS), capture_output=True,
                          timeout=timeout)


def test_entry_point_is_python_m_spindle():
    # The console script calls main() with no arguments: argv comes from sys.argv.
    r = py("import sys; sys.argv = ['spindle', '--version']\n"
           "from spindle._cli import main; sys.exit(main())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(b"spindle "), r.stdout
    r = py("import sys; sys.argv = ['spindle']\nfrom spindle._cli import main; sys.exit(main())")
    assert r.returncode == 2 and b"usage:" in r.stdout + r.stderr


def test_run_with_a_module_attr_string(wsgi_server, tmp_path):
    # Imported in each of the two workers, as `spindle run_script:app` does.
    script = tmp_path / "serve_string.py"
    script.write_text("import sys, spindle\n"
                      "sys.exit(spindle.run('run_script:app', bind='127.0.0.1:%s' % sys.argv[1],\n"
                      "                     workers=2, graceful_timeout=3))\n")
    s = wsgi_server("run_script", workers=2, cmd=[PY, str(script), "{port}"])
    r = s.get("/by/string")
    assert r.status == 200 and r.body == b"served by spindle.run, path /by/string"
    assert len(s.worker_pids()) == 2
    assert s.stop() == 0


def test_run_with_uvicorns_host_and_port(wsgi_server, tmp_path):
    """spindle.run(app, host=..., port=...) as uvicorn.run takes them: the one
    listener is there, not a second one beside 127.0.0.1:8080."""
    script = tmp_path / "serve_host_port.py"
    script.write_text("import sys, spindle\n"
                      "sys.exit(spindle.run('run_script:app', host='127.0.0.1', port=int(sys.argv[1]),\n"
                      "                     graceful_timeout=3))\n")
    s = wsgi_server("run_script", workers=1, cmd=[PY, str(script), "{port}"])
    assert s.get("/hp").status == 200
    assert "127.0.0.1:8080" not in s.stderr(), s.stderr()[-2000:]
    assert s.stop() == 0


def test_run_with_a_missing_module_says_so(tmp_path):
    script = tmp_path / "serve_missing.py"
    script.write_text("import sys, spindle\n"
                      "sys.exit(spindle.run('no_such_module:app', bind='127.0.0.1:%s' % sys.argv[1],\n"
                      "                     preload=True))\n")
    r = subprocess.run([PY, str(script), str(free_port())], env=env_for(), cwd=str(APPS),
                       capture_output=True, timeout=20)
    assert r.returncode != 0
    assert b"cannot load the application 'no_such_module:app': ModuleNotFoundError" in r.stderr, \
        r.stderr


def test_without_greenlet_import_says_what_to_install():
    # sys.modules[name] = None makes `import greenlet` fail as if not installed.
    r = py("import sys; sys.modules['greenlet'] = None\nimport spindle")
    assert r.returncode != 0
    assert r.stderr.strip().splitlines()[-1] == b"ImportError: spindle needs greenlet: pip install greenlet"
    assert b"PyCapsule_Import" not in r.stderr


if __name__ == "__main__":
    sys.exit("run with pytest")
