"""ASGI lifespan 2.0 per worker: startup before the first request with
state copied into each request's scope, shutdown after the stop;
--lifespan off; auto with an app that raises before receiving (an info
line, served without it); a failed startup (lifespan.startup.failed, or a
raise with --lifespan on) stops the server with the app's message instead
of restarting the worker in a loop."""
import json
import subprocess
import time

from lib.asgiutil import APPS, PYPATH, asgi  # noqa: F401
from lib.wsgiutil import PY, env_for, free_port


def test_startup_state_and_shutdown(asgi, tmp_path):
    done = tmp_path / "shutdown"
    srv = asgi("asgi_spec:app", env={"ASGI_SHUTDOWN_FILE": str(done)})
    assert srv.json("/state") == {"greeting": "hello from lifespan"}
    assert not done.exists()
    srv.stop()
    assert done.read_text() == "shutdown ran\n"


def test_lifespan_off(asgi):
    srv = asgi("asgi_spec:app", "--lifespan", "off", env={"ASGI_LIFESPAN": "raise"})
    assert srv.get("/state").body == b"null"
    assert "lifespan" not in srv.stderr()


def test_auto_with_an_app_without_lifespan(asgi):
    srv = asgi("asgi_spec:app", env={"ASGI_LIFESPAN": "raise"})
    assert srv.get("/state").body == b"null"
    err = srv.stderr()
    assert "does not support lifespan (RuntimeError: no lifespan here); serving without it" in err
    assert "Traceback" not in err


def run_to_exit(*args, env=None, timeout=15):
    port = free_port()
    e = {"PYTHONPATH": PYPATH + ":" + str(APPS)}
    e.update(env or {})
    t = time.monotonic()
    p = subprocess.run([PY, "-m", "spindle", "asgi_spec:app", "--bind", "127.0.0.1:%d" % port,
                        "--workers", "2"] + list(args), env=env_for(e), cwd=str(APPS),
                       capture_output=True, timeout=timeout)
    return p.returncode, p.stderr.decode(), time.monotonic() - t


def test_failed_startup_stops_the_server():
    rc, err, took = run_to_exit(env={"ASGI_LIFESPAN": "fail"})
    assert rc != 0
    assert "ASGI lifespan startup failed: database unreachable" in err
    assert "could not start (see above); stopping" in err
    assert "starting a new one" not in err and took < 10


def test_raise_with_lifespan_on_stops_the_server():
    rc, err, _ = run_to_exit("--lifespan", "on", env={"ASGI_LIFESPAN": "raise"})
    assert rc != 0
    assert "ASGI lifespan startup failed: RuntimeError: no lifespan here" in err
    assert "starting a new one" not in err


def test_bad_flag_values():
    rc, err, _ = run_to_exit("--lifespan", "maybe")
    assert rc == 2 and "--lifespan is auto, on or off, not 'maybe'" in err
    rc, err, _ = run_to_exit("--interface", "rsgi")
    assert rc == 2 and "--interface is auto, asgi or wsgi, not 'rsgi'" in err


def test_term_during_the_startup_stops_every_worker():
    """A TERM while the workers are still in their lifespan startup: the
    stop waits for no request (none is served) and every worker ends. It
    was lost in a worker that had not started serving yet, which then
    served on until the master's graceful timeout killed it."""
    port = free_port()
    p = subprocess.Popen([PY, "-m", "spindle", "asgi_spec:app", "--bind", "127.0.0.1:%d" % port,
                          "--workers", "2"], env=env_for({"PYTHONPATH": PYPATH + ":" + str(APPS),
                                                          "ASGI_LIFESPAN": "slow"}),
                         cwd=str(APPS), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(0.8)  # listening, the workers in their 1.5 s startup
        p.terminate()
        rc = p.wait(8)  # the graceful timeout is 30 s: a lost stop would outlast this
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    err = p.stderr.read().decode()
    assert rc == 0, err
    assert "graceful stop" in err and err.count("exiting after 0 requests") == 2, err

