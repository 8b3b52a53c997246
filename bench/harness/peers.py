"""The servers the harness compares and the applications they run: for each
server, whether it is installed, what provides it (the Python servers and
apps: the pinned virtual environment build/venv, made by scripts/deps.sh
from requirements.txt; the others: Debian packages), its version, and the
command line that serves an application with N workers on a port. Every server gets the same worker count; access logs are off in all of
them, unless bench/run --access-log asks spindle and nginx for one."""
import functools
import os
import shutil
import subprocess
import sys

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(BENCH)
WSGI_APPS = os.path.join(BENCH, "wsgi_apps")
PEER_DIR = os.path.join(BENCH, "peers")
# Every Python server, app and module comes from build/venv (PY= overrides).
VENV_PY = os.path.join(ROOT, "build", "venv", "bin", "python")
PY = os.environ.get("PY", VENV_PY)
NGINX = os.environ.get("NGINX", shutil.which("nginx") or "/usr/sbin/nginx")

HELLO = b"Hello world!"

# name -> (WSGI module:callable, Python modules it imports, what GET / answers:
# exact bytes, or a marker the body must contain).
APPS = {
    "hello": ("hello:application", [], ("exact", HELLO)),
    "ip": ("webpy_ip:application", ["web"], ("exact", b"127.0.0.1")),
    "mako": ("mako_page:application", ["mako"], ("contains", b"<li>item 9</li>")),
    "sqlite": ("sqla_app:row_application", ["sqlalchemy"], ("contains", b"row ")),
    "pg": ("sqla_app:row_application", ["sqlalchemy", "psycopg2"], ("contains", b"row ")),
    "mako-pg": ("sqla_app:page_application", ["sqlalchemy", "psycopg2", "mako"], ("contains", b"</table>")),
    "flask": ("flask_hello:application", ["flask"], ("exact", HELLO)),
}
APP_DOC = {
    "hello": "WSGI hello world (bench/wsgi_apps/hello.py; native hello for nginx, node, tornado, spindle-c)",
    "ip": "web.py \"your IP\" page (webpy_ip.py)",
    "mako": "a Mako template: a page with a title and a 10-item list (mako_page.py)",
    "sqlite": "SQLAlchemy ORM: one row by random primary key from a 1,000-row SQLite table (sqla_app.py)",
    "pg": "the same query on PostgreSQL through psycopg2, pooled connections",
    "mako-pg": "10 rows from PostgreSQL rendered through a Mako template",
    "flask": "a one-route Flask app answering the hello world (flask_hello.py)",
}


@functools.lru_cache(maxsize=None)
def have_module(name):
    """Can PY import NAME? Asked once per module per run (a subprocess each):
    every workload checks its peers again."""
    return subprocess.run([PY, "-c", "import " + name], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def requirements():
    """The distribution names pinned in requirements.txt, lower case."""
    try:
        with open(os.path.join(ROOT, "requirements.txt")) as f:
            return {line.split("==")[0].strip().lower().replace("_", "-") for line in f
                    if line.strip() and not line.startswith("#")}
    except OSError:
        return set()


# import name -> distribution name, where they differ
DISTRIBUTIONS = {"web": "web.py", "psycopg2": "psycopg2-binary", "yaml": "PyYAML"}


def missing_module(name):
    """What to say when PY cannot import NAME."""
    dist = DISTRIBUTIONS.get(name, name)
    why = "Python module %s missing from %s: run scripts/deps.sh" % (
        name, "build/venv" if os.path.abspath(PY) == VENV_PY else PY)
    if dist.lower().replace("_", "-").replace(".", "-") not in {d.replace(".", "-") for d in requirements()}:
        why += " (%s is not in requirements.txt, so deps.sh does not install it)" % dist
    return why


def dist_version(module):
    """The installed version of MODULE's distribution, as pip names it."""
    return out_of([PY, "-c", "import importlib.metadata as m; print(m.version(%r))"
                   % DISTRIBUTIONS.get(module, module)]) or py_version_of(module)


def out_of(argv):
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=20)
        return r.stdout.decode(errors="replace").strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def py_version_of(module):
    return out_of([PY, "-c", "import %s as m; print(getattr(m, '__version__', getattr(m, 'version', '?')))" % module])


class Peer:
    """A server. kind 'native' serves only its own hello world; 'wsgi' runs
    every app of APPS through WSGI."""
    name = kind = ""
    packages = ()      # Debian packages that provide it (not for Python: those come from build/venv)
    modules = ()       # Python modules it needs (from PY, build/venv's python)
    doc = ""
    note = ""          # what a reader of the tables must know about it

    def __init__(self, ctx):
        self.ctx = ctx  # the run's context: spindle snapshot paths

    def access_log(self, workdir):
        """The access log file when the run asks for one (--access-log), else None."""
        opts = getattr(self.ctx, "opts", None)
        return os.path.join(workdir, "access.log") if getattr(opts, "access_log", False) else None

    def available(self):
        """None when usable, else why not."""
        for m in self.modules:
            if not have_module(m):
                return missing_module(m)
        return None

    def version(self):
        return ""

    def runs(self, app):
        return app == "hello" or self.kind == "wsgi"

    def command(self, app, port, workers, workdir):
        """(argv, env, cwd) serving APP on 127.0.0.1:PORT with WORKERS."""
        raise NotImplementedError


class SpindleC(Peer):
    name, kind = "spindle-c", "native"
    doc = "build/spindle, its built-in hello world (the C handler API)"

    def available(self):
        return None if os.access(self.ctx.spindle_bin, os.X_OK) else "build/spindle not built (make)"

    def version(self):
        return self.ctx.spindle_version

    def command(self, app, port, workers, workdir, root=None, tls=None):
        """TLS: {"cert": PEM, "key": PEM} (the tls workload): an https://
        listener, TLS 1.3 only (the suite and group are the client's)."""
        bind = ("https://127.0.0.1:%d" if tls else "127.0.0.1:%d") % port
        argv = [self.ctx.spindle_bin, "--bind", bind, "--workers", str(workers),
                "--log-level", "warning", "--max-connections", "15000", "--keepalive-timeout", "120"]
        if tls:
            argv += ["--certfile", tls["cert"], "--keyfile", tls["key"], "--tls-min-version", "1.3"]
        if root:
            argv += ["--root", root]
        if self.access_log(workdir):
            argv += ["--access-log", self.access_log(workdir)]
        return argv, {}, workdir


class SpindleCUring(SpindleC):
    name, kind = "spindle-c-uring", "native"
    doc = ("build/spindle --io-backend uring (the io_uring loop backend; issue 23; the same as "
           "spindle-c where the default, auto, gets io_uring)")
    backend = "uring"

    def command(self, app, port, workers, workdir, root=None, tls=None):
        argv, env, cwd = super().command(app, port, workers, workdir, root=root, tls=tls)
        return argv + ["--io-backend", self.backend], env, cwd


class SpindleCEpoll(SpindleCUring):
    name, kind = "spindle-c-epoll", "native"
    doc = "build/spindle --io-backend epoll (the loop backend before auto became the default)"
    backend = "epoll"


class SpindlePy(Peer):
    name, kind = "spindle", "wsgi"
    doc = "python3 -m spindle MODULE:app (the WSGI binding)"

    def available(self):
        if not os.path.isdir(os.path.join(self.ctx.spindle_py, "spindle")):
            return "the WSGI binding is not built (make python)"
        return None

    def version(self):
        return self.ctx.spindle_version

    def command(self, app, port, workers, workdir):
        argv = [PY, "-m", "spindle", APPS[app][0], "--chdir", WSGI_APPS, "--bind", "127.0.0.1:%d" % port,
                "--workers", str(workers), "--log-level", "warning", "--max-connections", "15000",
                "--keepalive-timeout", "120"]
        if self.access_log(workdir):
            argv += ["--access-log", self.access_log(workdir)]
        return argv, {"PYTHONPATH": self.ctx.spindle_py}, workdir


class SpindlePatched(SpindlePy):
    name = "spindle-patched"
    doc = "python3 -m spindle with spindle.patch() called by the app (BENCH_SPINDLE_PATCH=1)"

    def command(self, app, port, workers, workdir):
        argv, env, cwd = super().command(app, port, workers, workdir)
        return argv, dict(env, BENCH_SPINDLE_PATCH="1"), cwd


def nginx_conf(workdir, port, workers, body, worker_connections=20000, access_log=None):
    """An nginx config in WORKDIR: every path it writes (pid, logs, temp
    directories) inside WORKDIR, access log off (or to ACCESS_LOG in the
    combined format), run as the current user."""
    tmp = os.path.join(workdir, "tmp")
    os.makedirs(tmp, exist_ok=True)
    user = ""
    if os.getuid() == 0:
        import grp
        import pwd
        user = "user %s %s;" % (pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name)
    conf = """%(user)s
worker_processes %(workers)d;
master_process on;
daemon off;
pid %(dir)s/nginx.pid;
error_log %(dir)s/error.log warn;
worker_rlimit_nofile 20000;
events { worker_connections %(wc)d; }
http {
    access_log %(access)s;
    keepalive_requests 1000000;
    keepalive_timeout 120;
    sendfile on;
    tcp_nopush on;
    client_body_temp_path %(tmp)s/body;
    proxy_temp_path %(tmp)s/proxy;
    fastcgi_temp_path %(tmp)s/fastcgi;
    uwsgi_temp_path %(tmp)s/uwsgi;
    scgi_temp_path %(tmp)s/scgi;
    %(body)s
}
""" % {"user": user, "workers": workers, "dir": workdir, "tmp": tmp, "body": body % {"port": port},
       "wc": worker_connections, "access": (access_log + " combined") if access_log else "off"}
    path = os.path.join(workdir, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    return [NGINX, "-p", workdir, "-c", path, "-e", os.path.join(workdir, "error.log")]


def nginx_tls(tls):
    """The tls workload's server block lines: the same certificate, TLS 1.3
    only, X25519, TLS_AES_128_GCM_SHA256 (session tickets on, nginx's
    default, so resumption works; no session cache)."""
    return ("ssl_certificate %s; ssl_certificate_key %s; ssl_protocols TLSv1.3; ssl_ecdh_curve X25519; "
            "ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256; ssl_prefer_server_ciphers on;"
            % (tls["cert"], tls["key"]))


class Nginx(Peer):
    name, kind = "nginx", "native"
    packages = ("nginx",)
    doc = 'nginx `return 200 "Hello world!"`'

    def available(self):
        return None if os.access(NGINX, os.X_OK) else "nginx missing (Debian: nginx)"

    def version(self):
        return out_of([NGINX, "-v"]).split("/")[-1]

    def command(self, app, port, workers, workdir, root=None, tls=None):
        listen = "listen 127.0.0.1:%(port)d" + (" ssl; " + nginx_tls(tls) if tls else ";")
        if root:
            body = ("server { %s root %s; "
                    "location / { types { text/plain txt; application/octet-stream bin; text/html html; "
                    "application/javascript js; image/png png; } } }" % (listen, root))
        else:
            body = ('server { %s default_type text/plain; '
                    'location / { return 200 "Hello world!"; } }' % listen)
        return nginx_conf(workdir, port, workers, body, access_log=self.access_log(workdir)), {}, workdir


class Node(Peer):
    name, kind = "node", "native"
    packages = ("nodejs",)
    doc = "Node.js `http` module (bench/peers/node_hello.js), cluster for >1 worker"

    def available(self):
        return None if shutil.which("node") else "node missing (Debian: nodejs)"

    def version(self):
        return out_of(["node", "--version"])

    def command(self, app, port, workers, workdir):
        return ["node", os.path.join(PEER_DIR, "node_hello.js"), str(port), str(workers)], {}, workdir


class Tornado(Peer):
    name, kind = "tornado", "native"
    modules = ("tornado",)
    doc = "Tornado RequestHandler (bench/peers/tornado_hello.py), fork_processes for >1"

    def version(self):
        return py_version_of("tornado")

    def command(self, app, port, workers, workdir):
        return [PY, os.path.join(PEER_DIR, "tornado_hello.py"), str(port), str(workers)], {}, workdir


class GunicornSync(Peer):
    name, kind = "gunicorn-sync", "wsgi"
    modules = ("gunicorn",)
    worker_args = ()
    doc = "gunicorn, sync worker"
    note = "closes the connection after every answer (`Connection: close`): each request pays for a connection"

    def version(self):
        return dist_version("gunicorn")

    def command(self, app, port, workers, workdir):
        return ([PY, "-m", "gunicorn", "--workers", str(workers), *self.worker_args, "--bind", "127.0.0.1:%d" % port,
                 "--chdir", WSGI_APPS, "--backlog", "2048", "--graceful-timeout", "3", "--keep-alive", "120",
                 "--log-level", "warning", APPS[app][0]], {}, workdir)


class GunicornGevent(GunicornSync):
    name = "gunicorn-gevent"
    modules = ("gunicorn", "gevent")
    worker_args = ("-k", "gevent", "--worker-connections", "10000")
    doc = "gunicorn, gevent worker"


class Uwsgi(Peer):
    name, kind = "uwsgi", "wsgi"
    packages = ("uwsgi", "uwsgi-plugin-python3")
    doc = "uWSGI --http-socket with the python3 plugin, no master"
    note = ("closes the connection after every answer without announcing it: wrk counts each close as a read "
            "error, so its errors column is its request count; each request pays for a connection")

    def available(self):
        if not shutil.which("uwsgi") or not any(
                f.startswith("python3") for f in os.listdir("/usr/lib/uwsgi/plugins")
                if os.path.isdir("/usr/lib/uwsgi/plugins")):
            return "uWSGI or its python3 plugin missing (Debian: uwsgi uwsgi-plugin-python3)"
        return None

    def version(self):
        return out_of(["uwsgi", "--version"])

    def command(self, app, port, workers, workdir):
        # Debian's plugin embeds Debian's Python 3.11; the apps' modules
        # (web.py, Mako, SQLAlchemy, psycopg2, Flask) come from build/venv's
        # site-packages, as for every other server.
        return (["uwsgi", "--plugin", "python3", "--http-socket", "127.0.0.1:%d" % port, "--chdir", WSGI_APPS,
                 "--pythonpath", site_packages(), "--module", APPS[app][0], "--processes", str(workers),
                 "--disable-logging", "--listen", "1024", "--die-on-term", "--need-app", "--lazy-apps"], {}, workdir)


@functools.lru_cache(maxsize=None)
def site_packages():
    return out_of([PY, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])


class Granian(Peer):
    """granian (Rust, hyper) with its WSGI interface: one worker process
    (beside its supervisor), HTTP/1 only, no WebSockets, one blocking thread
    (the Python side of a WSGI worker: its default, up to 512 threads for a
    pinned CPU, gave half the requests/s of a single thread here and a
    warning to lower it)."""
    name, kind = "granian", "wsgi"
    modules = ("granian",)
    doc = "granian --interface wsgi (Rust HTTP, the app in one blocking thread)"
    note = "its supervisor process and the worker: CPU and memory are the whole tree's"

    def version(self):
        return dist_version("granian")

    def command(self, app, port, workers, workdir):
        return ([PY, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1", "--port", str(port),
                 "--workers", str(workers), "--http", "1", "--no-ws", "--blocking-threads", "1",
                 "--backlog", "2048", "--no-access-log", "--log-level", "warning", "--working-dir", WSGI_APPS,
                 APPS[app][0]], {}, WSGI_APPS)


class SelfServed(Peer):
    """A Python WSGI server started by a launcher script of wsgi_apps/:
    SCRIPT MODULE:CALLABLE PORT WORKERS."""
    kind = "wsgi"
    script = module = ""

    def version(self):
        return py_version_of(self.module)

    def command(self, app, port, workers, workdir):
        return ([PY, os.path.join(WSGI_APPS, self.script), APPS[app][0], str(port), str(workers)], {}, WSGI_APPS)


class Gevent(SelfServed):
    name = module = "gevent"
    script = "gevent_serve.py"
    modules = ("gevent",)
    doc = "gevent.pywsgi.WSGIServer (wsgi_apps/gevent_serve.py), pre-forked for >1 worker"
    note = "monkey-patched; TCP_NODELAY set on its listener (without it every answer waits ~40 ms for a delayed ACK)"


class Eventlet(SelfServed):
    name = module = "eventlet"
    script = "eventlet_serve.py"
    modules = ("eventlet",)
    doc = "eventlet.wsgi.server (wsgi_apps/eventlet_serve.py), pre-forked for >1 worker"
    note = "monkey-patched; TCP_NODELAY set on its listener, as for gevent"


class Wsgiref(SelfServed):
    """Only when asked for (--servers wsgiref): one thread, HTTP/1.0, far
    behind the others; bench/wsgi.sh asks for it."""
    name = "wsgiref"
    module = "wsgiref"
    script = "wsgiref_serve.py"
    doc = "the standard library's wsgiref.simple_server (wsgi_apps/wsgiref_serve.py), one thread"
    note = "single-threaded, closes every connection; only one worker whatever --workers says"

    def version(self):
        return "Python " + out_of([PY, "-c", "import platform; print(platform.python_version())"])


class NginxTornado(Peer):
    """The articles' deployment: nginx (1 worker) proxying, with upstream
    keep-alive, to one Tornado process per worker on its own port."""
    name, kind = "nginx+tornado", "native"
    packages = ("nginx",)
    modules = ("tornado",)
    doc = "nginx (1 worker, upstream keep-alive) in front of N single-process Tornado servers"

    def available(self):
        return Nginx(self.ctx).available() or Peer.available(self)

    def version(self):
        return "nginx %s + tornado %s" % (Nginx(self.ctx).version(), py_version_of("tornado"))

    def command(self, app, port, workers, workdir):
        from . import procs
        ports = [procs.free_port() for _ in range(workers)]
        upstream = " ".join("server 127.0.0.1:%d;" % p for p in ports)
        body = ("upstream app { %s keepalive 64; } server { listen 127.0.0.1:%%(port)d; location / { "
                "proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }" % upstream)
        argv = nginx_conf(workdir, port, 1, body)
        script = os.path.join(PEER_DIR, "nginx_front.sh")
        return [script, os.path.join(PEER_DIR, "tornado_hello.py"), ",".join(map(str, ports))] + argv, {"PY": PY}, workdir


ALL = [SpindleC, SpindleCUring, SpindleCEpoll, SpindlePy, Nginx, Node, Tornado, Granian, GunicornSync, GunicornGevent, Uwsgi, Gevent,
       Eventlet]
EXTRA = [NginxTornado, Wsgiref, SpindlePatched]  # only when named
BY_NAME = {p.name: p for p in ALL + EXTRA}
# The Debian packages of the peers that are not Python (nor npm: nothing
# comes from npm). The Python servers and apps are build/venv's.
BENCH_PACKAGES = ["nginx", "nodejs", "uwsgi", "uwsgi-plugin-python3", "postgresql", "wrk", "apache2-utils",
                  "valgrind"]


def app_missing(app):
    for m in APPS[app][1]:
        if not have_module(m):
            return missing_module(m)
    return None


def check_body(app, body):
    how, want = APPS[app][2]
    return body == want if how == "exact" else want in body


if __name__ == "__main__":
    sys.exit("not a program: bench/run uses this module")
