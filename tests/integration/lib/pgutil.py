"""A throw-away PostgreSQL for the tests (the approach of
bench/harness/databases.py): initdb in a temporary directory, a free port
on 127.0.0.1, trust auth, no fsync; as root it runs as the postgres user
(initdb refuses root). missing() says why it cannot run, for a skip."""
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile

from lib.proctools import ServerProcess, free_port


def bindir():
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]))
    return dirs[-1] if dirs else None


def missing():
    b = bindir()
    if not b or not os.access(os.path.join(b, "initdb"), os.X_OK):
        return "PostgreSQL server missing (Debian: postgresql)"
    if os.getuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and no `postgres` user to run PostgreSQL as"
    return None


class Postgres(ServerProcess):
    name = "postgresql"

    def __init__(self):
        super().__init__(port=free_port())
        b = bindir()
        self.dir = tempfile.mkdtemp(prefix="spindle-test-pg.")
        demote = None
        if os.getuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)

            def demote():
                os.setgid(pw.pw_gid)
                os.setuid(pw.pw_uid)
        data = os.path.join(self.dir, "data")
        r = subprocess.run([os.path.join(b, "initdb"), "-D", data, "-U", "test", "-A", "trust",
                            "--no-sync", "-E", "UTF8"], capture_output=True, preexec_fn=demote,
                           cwd=self.dir, timeout=60)
        if r.returncode:
            raise RuntimeError("initdb failed:\n" + (r.stdout + r.stderr).decode(errors="replace"))
        self.launch([os.path.join(b, "postgres"), "-D", data, "-p", str(self.port), "-k", self.dir,
                     "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c",
                     "max_connections=50"], stdout_path=os.path.join(self.dir, "pg.log"),
                    merge_stderr=True, cwd=self.dir, preexec_fn=demote)
        self.dsn = "host=127.0.0.1 port=%d user=test dbname=postgres" % self.port
        self.url = "postgresql+psycopg2://test@127.0.0.1:%d/postgres" % self.port
        try:
            self.wait_until(self._ready, 30, step=0.05, errors=(Exception,))
        except RuntimeError:
            self.stop()
            raise

    def _ready(self):
        import psycopg2
        socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        psycopg2.connect(self.dsn, connect_timeout=2).close()  # past recovery
        return True

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGINT)  # PostgreSQL's "fast" shutdown
        super().stop(5, 5)
        shutil.rmtree(self.dir, ignore_errors=True)
