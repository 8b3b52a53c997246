"""Installs the benchmark peers bench/run compares against that are not
Python (nginx, node, uWSGI, PostgreSQL, wrk, ab, valgrind), from Debian's
archive, when they are missing: as root with apt-get (one by one if the
batch fails), otherwise by saying what to run. Debian's packages start
system services (nginx on :80, PostgreSQL on :5432); those are stopped again,
since the harness starts its own on free ports. The Python servers and apps
are never installed here: they are build/venv's (scripts/deps.sh installs
requirements.txt into it), and a missing one is named with that advice."""
import os
import shutil
import subprocess

from .peers import BENCH_PACKAGES, PY

SERVICES = {"nginx": "nginx", "postgresql": "postgresql"}


def installed(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return b"install ok installed" in r.stdout


def peers():
    if not os.access(PY, os.X_OK):
        print("# NOTE: %s missing: run scripts/deps.sh (it makes build/venv from requirements.txt); the Python "
              "servers are skipped" % PY, flush=True)
    if not shutil.which("dpkg-query"):
        print("# NOTE: not a Debian system: install the peers by hand (%s)" % " ".join(BENCH_PACKAGES))
        return
    missing = [p for p in BENCH_PACKAGES if not installed(p)]
    if not missing:
        return
    if os.getuid() != 0 or not shutil.which("apt-get"):
        print("# NOTE: missing benchmark peers (skipped in this run): %s\n#   install them with: sudo apt-get "
              "install -y %s" % (" ".join(missing), " ".join(missing)), flush=True)
        return
    print("# installing benchmark peers: %s (apt-get)" % " ".join(missing), flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], env=env)
    args = ["apt-get", "install", "-y", "-qq", "--no-install-recommends"]
    if subprocess.run(args + missing, env=env).returncode:
        for p in missing:
            if subprocess.run(args + [p], env=env).returncode:
                print("# NOTE: apt-get install %s failed: the servers that need it are skipped" % p, flush=True)
    for pkg, svc in SERVICES.items():
        if pkg in missing:
            subprocess.run("systemctl stop %s || service %s stop" % (svc, svc), shell=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
