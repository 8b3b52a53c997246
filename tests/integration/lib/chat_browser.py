"""chat_browser.py — drives Debian's headless Chromium through the DevTools
protocol (standard library only: chatutil's WebSocket client) against the
chat example: two pages in separate browser contexts (two visitors, two
cookie jars), one on WebSockets and one on long polling, each must see
what the other sends; and run_two, two browsers (separate user-data dirs)
on two instances of the scaled chat, one posting, the other showing it.
Used by tests/integration/test_chat.py and test_chat_scaled.py; by hand:
    python3 tests/integration/lib/chat_browser.py http://127.0.0.1:8090/ [http://127.0.0.1:8091/]"""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/integration, for lib
from lib.chatutil import WS  # noqa: E402

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

    def call(self, method, session=None, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        self.ws.send_text(json.dumps(msg))
        while True:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("DevTools: no answer to " + method)
            op, data = self.ws.recv(left)
            r = json.loads(data)
            if r.get("id") == self.next_id:
                if "error" in r:
                    raise RuntimeError("%s: %s" % (method, r["error"]))
                return r.get("result", {})

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


def _js(s):
    return json.dumps(s)


def set_nick(cdp, page, nick):
    cdp.eval(page, "document.getElementById('nick').value = %s;"
                   "document.getElementById('nickform').requestSubmit(); true" % _js(nick))
    cdp.wait(page, "window.chat.nick === %s && window.chat.ready" % _js(nick), "nickname " + nick)


def say(cdp, page, text):
    cdp.eval(page, "document.getElementById('text').value = %s;"
                   "document.getElementById('sendform').requestSubmit(); true" % _js(text))


def sees(cdp, page, nick, text, what):
    expr = ("[...document.querySelectorAll('#log li')].some(li => li.dataset.nick === %s && "
            "li.querySelector('.text').textContent === %s)" % (_js(nick), _js(text)))
    cdp.wait(page, expr, what)


def on_mode(cdp, page, mode, what):
    """Until the page's chat is ready on that transport ('ws' or 'poll')."""
    cdp.wait(page, "window.chat && window.chat.ready && window.chat.mode === %s" % _js(mode), what)


def _start(profile_dir, deadline):
    """A headless Chromium on its own user-data dir: (process, log, CDP)."""
    os.makedirs(profile_dir, exist_ok=True)
    log = open(os.path.join(profile_dir, "chromium.log"), "wb")
    proc = subprocess.Popen([CHROMIUM] + FLAGS + ["--user-data-dir=" + profile_dir, "about:blank"],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            start_new_session=True)
    port_file = pathlib.Path(profile_dir) / "DevToolsActivePort"
    while not (port_file.exists() and len(port_file.read_text().split()) >= 2):
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc, log)
            raise RuntimeError("chromium did not start its DevTools endpoint")
        time.sleep(0.05)
    port, path = port_file.read_text().split()[:2]
    try:
        return proc, log, CDP("ws://127.0.0.1:%s%s" % (port, path), deadline)
    except BaseException:
        _stop(proc, log)
        raise


def _stop(proc, log):
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(3)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(3)
    try:  # its helpers (zygote, renderers) are in its own session
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    log.close()


def run_two(url_a, url_b, profile_dir, timeout=35.0):
    """Two browsers, each on its own instance (A on WebSockets, B long
    polling): what A posts shows in B and the other way round."""
    deadline = time.monotonic() + timeout
    started, steps = [], []
    try:
        started.append(_start(os.path.join(profile_dir, "a"), deadline))
        started.append(_start(os.path.join(profile_dir, "b"), deadline))
        (_, _, ca), (_, _, cb) = started
        steps.append("two browsers")
        a = ca.page(url_a + "?transport=ws")
        b = cb.page(url_b + "?transport=poll")
        on_mode(ca, a, "ws", "page A on ws")
        on_mode(cb, b, "poll", "page B polling")
        set_nick(ca, a, "ana")
        set_nick(cb, b, "bo")
        steps.append("pages ready")
        say(ca, a, "from instance A")
        sees(cb, b, "ana", "from instance A", "A's message in B, on the other instance")
        steps.append("A -> B")
        say(cb, b, "from instance B")
        sees(ca, a, "bo", "from instance B", "B's message in A, on the other instance")
        steps.append("B -> A")
        ca.wait(a, "window.chat.online === 2", "2 online in A")
        steps.append("online")
        return {"ok": True, "steps": steps}
    except Exception as e:  # noqa: BLE001 — reported to the test
        return {"ok": False, "steps": steps, "error": "%s: %s" % (type(e).__name__, e)}
    finally:
        for proc, log, _ in started:
            _stop(proc, log)


def run(url, profile_dir, timeout=35.0):
    """The two-page scenario; returns {"ok": True, ...} or {"ok": False, "error": ...}."""
    deadline = time.monotonic() + timeout
    started, steps = [], []
    try:
        started.append(_start(profile_dir, deadline))
        cdp = started[0][2]
        steps.append("devtools")
        a = cdp.page(url + "?transport=ws")
        b = cdp.page(url + "?transport=poll")
        on_mode(cdp, a, "ws", "page A on ws")
        on_mode(cdp, b, "poll", "page B polling")
        steps.append("pages ready")
        set_nick(cdp, a, "alice")
        set_nick(cdp, b, "bob")
        steps.append("nicknames")
        say(cdp, a, "hello from A <b>over ws</b>")
        sees(cdp, b, "alice", "hello from A <b>over ws</b>", "A's message in B")
        sees(cdp, a, "alice", "hello from A <b>over ws</b>", "A's message in A")
        steps.append("A -> B")
        say(cdp, b, "hi from B, by long polling")
        sees(cdp, a, "bob", "hi from B, by long polling", "B's message in A")
        steps.append("B -> A")
        # the periodic announcement: two visitors online
        cdp.wait(a, "window.chat.online === 2", "2 online in A")
        cdp.wait(b, "window.chat.online === 2", "2 online in B")
        steps.append("online")
        # the nickname survives a reload (the cookie), and so does the history
        cdp.eval(a, "location.reload(); true")
        time.sleep(0.2)
        cdp.wait(a, "window.chat && window.chat.ready && window.chat.nick === 'alice'",
                 "A's nickname after a reload")
        sees(cdp, a, "bob", "hi from B, by long polling", "history after a reload")
        steps.append("reload")
        return {"ok": True, "steps": steps}
    except Exception as e:  # noqa: BLE001 — reported to the test
        return {"ok": False, "steps": steps, "error": "%s: %s" % (type(e).__name__, e)}
    finally:
        for proc, log, _ in started:
            _stop(proc, log)


if __name__ == "__main__":
    tmp = tempfile.mkdtemp(prefix="chat-chromium-")
    try:
        url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8090/"
        r = run_two(url, sys.argv[2], tmp) if len(sys.argv) > 2 else run(url, tmp)
        print(json.dumps(r))
        sys.exit(0 if r["ok"] else 1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
