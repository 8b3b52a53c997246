"""The ASGI servers of bench/run's asgi workload and the apps they serve
(bench/asgi_apps/): spindle (python -m spindle MODULE:app), granian (its
ASGI interface, uvloop), uvicorn with httptools and uvloop and with h11 (its
pure-Python parser), hypercorn (uvloop worker) and daphne (Twisted). One
worker each; access logs off. Every one is build/venv's (requirements.txt's
pins), run by build/venv/bin/python."""
import os

from .peers import PY, Peer, dist_version, have_module, missing_module

ASGI_APPS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "asgi_apps")

# name -> (module:app, Python modules it needs, what GET / answers)
APPS = {
    "hello": ("hello:app", [], ("exact", b"Hello world!")),
    "fastapi": ("fastapi_json:app", ["fastapi"], ("exact", b'{"message":"Hello world!","items":[1,2,3]}')),
}


class AsgiPeer(Peer):
    kind = "asgi"
    module = ""

    def available(self):
        for m in self.modules:
            if not have_module(m):
                return missing_module(m)
        return None

    def version(self):
        return dist_version(self.module)

    def runs(self, app):
        return app in APPS

    def spec(self, app):
        return APPS[app][0]


class SpindleAsgi(AsgiPeer):
    name = "spindle"
    doc = "python -m spindle MODULE:app (the binding, ASGI detected)"

    def available(self):
        if not os.path.isdir(os.path.join(self.ctx.spindle_py, "spindle")):
            return "the Python binding is not built (make python)"
        return None

    def version(self):
        return self.ctx.spindle_version

    def command(self, app, port, workers, workdir):
        argv = [PY, "-m", "spindle", self.spec(app), "--chdir", ASGI_APPS_DIR, "--bind", "127.0.0.1:%d" % port,
                "--workers", str(workers), "--log-level", "warning", "--max-connections", "15000",
                "--keepalive-timeout", "120"]
        return argv, {"PYTHONPATH": self.ctx.spindle_py}, ASGI_APPS_DIR


class Granian(AsgiPeer):
    name, module = "granian", "granian"
    modules = ("granian", "uvloop")
    doc = "granian --interface asgi --loop uvloop --http 1 (Rust HTTP and WebSockets)"
    note = "its supervisor process and the worker: CPU and memory are the whole tree's"

    def command(self, app, port, workers, workdir):
        return ([PY, "-m", "granian", "--interface", "asgi", "--loop", "uvloop", "--host", "127.0.0.1",
                 "--port", str(port), "--workers", str(workers), "--http", "1", "--backlog", "2048",
                 "--no-access-log", "--log-level", "warning", "--working-dir", ASGI_APPS_DIR, self.spec(app)],
                {}, ASGI_APPS_DIR)


class Uvicorn(AsgiPeer):
    name, module = "uvicorn", "uvicorn"
    modules = ("uvicorn", "httptools", "uvloop", "websockets")
    http, loop = "httptools", "uvloop"
    doc = "uvicorn --http httptools --loop uvloop"

    def command(self, app, port, workers, workdir):
        argv = [PY, "-m", "uvicorn", self.spec(app), "--app-dir", ASGI_APPS_DIR, "--host", "127.0.0.1",
                "--port", str(port), "--http", self.http, "--loop", self.loop, "--no-access-log",
                "--log-level", "warning", "--timeout-keep-alive", "120"]
        if workers > 1:
            argv += ["--workers", str(workers)]
        return argv, {}, ASGI_APPS_DIR


class UvicornH11(Uvicorn):
    name = "uvicorn-h11"
    modules = ("uvicorn", "h11", "websockets")
    http, loop = "h11", "asyncio"
    doc = "uvicorn --http h11 --loop asyncio (pure Python)"


class Hypercorn(AsgiPeer):
    name, module = "hypercorn", "hypercorn"
    modules = ("hypercorn", "uvloop")
    doc = "hypercorn -k uvloop"
    note = "runs its worker in a child process (CPU is the whole tree's)"

    def command(self, app, port, workers, workdir):
        return ([PY, "-m", "hypercorn", self.spec(app), "--bind", "127.0.0.1:%d" % port, "-k", "uvloop",
                 "-w", str(workers), "--keep-alive", "120", "--log-level", "warning"], {}, ASGI_APPS_DIR)


class Daphne(AsgiPeer):
    name, module = "daphne", "daphne"
    modules = ("daphne",)
    doc = "daphne (Twisted), one process"
    note = "has no worker option: one process whatever --workers says"

    def command(self, app, port, workers, workdir):
        return ([PY, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "-v", "0", self.spec(app)], {},
                ASGI_APPS_DIR)


ALL = [SpindleAsgi, Granian, Uvicorn, UvicornH11, Hypercorn, Daphne]
BY_NAME = {p.name: p for p in ALL}


def app_missing(app):
    for m in APPS[app][1]:
        if not have_module(m):
            return missing_module(m)
    return None


def check_body(app, body):
    how, want = APPS[app][2]
    return body == want if how == "exact" else want in body
