"""chat_browser.py — drives Debian's headless Chromium (lib/chromium.py,
the DevTools protocol) against the chat example: two pages in separate browser contexts (two visitors, two
cookie jars), one on WebSockets and one on long polling, each must see
what the other sends; and run_two, two browsers (separate user-data dirs)
on two instances of the scaled chat, one posting, the other showing it.
Used by tests/integration/test_chat.py and test_chat_scaled.py; by hand:
    python3 tests/integration/lib/chat_browser.py http://127.0.0.1:8090/ [http://127.0.0.1:8091/]"""
import json
import os
import pathlib
import shutil
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/integration, for lib
from lib.chromium import start as _start, stop as _stop  # noqa: E402


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
