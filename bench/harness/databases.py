"""Databases for the WSGI app matrix: a SQLite file, and a throw-away
PostgreSQL cluster (initdb in a temporary directory, a free port on
127.0.0.1, fsync off, stopped by its PID), both seeded with
wsgi_apps/sqla_app.seed before any server starts."""
import glob
import os
import pwd
import shutil
import subprocess
import tempfile

from . import peers, procs


def seed(url):
    r = subprocess.run([peers.PY, "-c", "import sqla_app, sys; sqla_app.seed(sys.argv[1])", url],
                       cwd=peers.WSGI_APPS, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode:
        raise RuntimeError("seeding %s failed:\n%s" % (url, r.stdout.decode(errors="replace")))


def sqlite_url(workdir):
    url = "sqlite:///" + os.path.join(workdir, "bench.db")
    seed(url)
    return url


def pg_bindir():
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]))
    return dirs[-1] if dirs else None


class Postgres:
    """PostgreSQL in its own temporary directory. As root it runs as the
    `postgres` user (initdb refuses root)."""

    def __init__(self, cpus):
        self.cpus = cpus
        self.server = None
        self.dir = None

    @staticmethod
    def missing():
        b = pg_bindir()
        if not b or not os.access(os.path.join(b, "initdb"), os.X_OK):
            return "PostgreSQL server missing (Debian: postgresql)"
        if os.getuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                return "running as root and no `postgres` user to run PostgreSQL as"
        return None

    def start(self):
        b = pg_bindir()
        self.dir = tempfile.mkdtemp(prefix="spindle-bench-pg.")
        user = None
        if os.getuid() == 0:
            user = "postgres"
            pw = pwd.getpwnam(user)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        data = os.path.join(self.dir, "data")
        r = subprocess.run([os.path.join(b, "initdb"), "-D", data, "-U", "bench", "-A", "trust", "--no-sync",
                            "-E", "UTF8"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, user=user,
                           cwd=self.dir)
        if r.returncode:
            raise RuntimeError("initdb failed:\n" + r.stdout.decode(errors="replace"))
        self.port = procs.free_port()
        argv = [os.path.join(b, "postgres"), "-D", data, "-p", str(self.port), "-k", self.dir,
                "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
                "-c", "full_page_writes=off", "-c", "max_connections=400", "-c", "logging_collector=off"]
        self.server = procs.Server("postgresql", argv, self.port, self.cpus, self.dir, user=user)
        self.server.start()
        self.server.wait_listening(60)
        self.url = "postgresql+psycopg2://bench@127.0.0.1:%d/postgres" % self.port
        # Accepting TCP before recovery ends: retry the seed briefly.
        for attempt in range(50):
            try:
                seed(self.url)
                break
            except RuntimeError:
                if attempt == 49:
                    raise
                import time
                time.sleep(0.2)
        return self.url

    def version(self):
        b = pg_bindir()
        return procs_out([os.path.join(b, "postgres"), "--version"]) if b else ""

    def stop(self):
        if self.server:
            # SIGINT: PostgreSQL's "fast" shutdown.
            import signal
            self.server.stop(signal.SIGINT)
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def procs_out(argv):
    return peers.out_of(argv)
