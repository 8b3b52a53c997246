"""chromium.py — Debian's headless Chromium driven through the DevTools
protocol, standard library only (chatutil's WebSocket client): start one on
its own user-data dir, call methods and evaluate JavaScript in its pages,
stop it and its helpers. The chat's browser tests (chat_browser.py,
test_h2_websocket.py) and bench/run's page workload (bench/harness/page.py)
use it."""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/integration, for lib
from lib.chatutil import WS  # noqa: E402
from lib.proctools import stop_process  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-dev-shm-usage", "--remote-debugging-address=127.0.0.1",
         "--remote-debugging-port=0"]


class CDP:
    """The browser's DevTools endpoint; commands to pages go with a sessionId."""

    def __init__(self, ws_url, deadline):
        u = urllib.parse.urlparse(ws_url)
        self.ws = WS(u.hostname, u.port, u.path, timeout=10)
        self.deadline = deadline
        self.next_id = 0

    def _next(self, what):
        """The next message from the browser, a reply or an event."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("DevTools: no " + what)
        op, data = self.ws.recv(left)
        return json.loads(data)

    def send(self, method, session=None, **params):
        """Sends a command without waiting: its id."""
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        self.ws.send_text(json.dumps(msg))
        return self.next_id

    def call(self, method, session=None, **params):
        """A command's result; events that come before it are dropped."""
        want = self.send(method, session, **params)
        while True:
            r = self._next("answer to " + method)
            if r.get("id") == want:
                if "error" in r:
                    raise RuntimeError("%s: %s" % (method, r["error"]))
                return r.get("result", {})

    def until_event(self, method, session, seen=None):
        """Reads up to the event METHOD of SESSION and returns its params;
        every message before it goes to SEEN(message) when given (the events
        of a domain enabled with e.g. Network.enable)."""
        while True:
            r = self._next("event " + method)
            if r.get("method") == method and r.get("sessionId") == session:
                return r.get("params", {})
            if seen:
                seen(r)

    def eval(self, session, expr):
        r = self.call("Runtime.evaluate", session, expression=expr, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def wait(self, session, expr, what):
        while time.monotonic() < self.deadline:
            try:
                v = self.eval(session, expr)
            except RuntimeError:
                v = None  # the page is still loading
            if v:
                return v
            time.sleep(0.05)
        raise TimeoutError("waiting for " + what)

    def page(self, url):
        ctx = self.call("Target.createBrowserContext")["browserContextId"]
        tid = self.call("Target.createTarget", url=url, browserContextId=ctx)["targetId"]
        return self.call("Target.attachToTarget", targetId=tid, flatten=True)["sessionId"]


def start(profile_dir, deadline, flags=(), prefix=()):
    """A headless Chromium on its own user-data dir: (process, log, CDP).
    FLAGS: more command-line switches; PREFIX: what runs it (taskset -c N:
    its zygote and renderers inherit the CPU)."""
    os.makedirs(profile_dir, exist_ok=True)
    log = open(os.path.join(profile_dir, "chromium.log"), "wb")
    proc = subprocess.Popen(list(prefix) + [CHROMIUM] + FLAGS + list(flags) +
                            ["--user-data-dir=" + profile_dir, "about:blank"],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            start_new_session=True)
    port_file = pathlib.Path(profile_dir) / "DevToolsActivePort"
    while not (port_file.exists() and len(port_file.read_text().split()) >= 2):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc, log)
            raise RuntimeError("chromium did not start its DevTools endpoint")
        time.sleep(0.05)
    port, path = port_file.read_text().split()[:2]
    try:
        return proc, log, CDP("ws://127.0.0.1:%s%s" % (port, path), deadline)
    except BaseException:
        stop(proc, log)
        raise


def stop(proc, log):
    stop_process(proc, grace=3, after_kill=3)
    try:  # its helpers (zygote, renderers) are in its own session
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    log.close()
