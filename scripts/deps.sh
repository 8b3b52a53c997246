#!/bin/bash
# scripts/deps.sh [build|test|bench] — installs what one purpose needs, only
# what is missing: build (the default; make, make run) the compiler and the
# -dev libraries; test (make test) everything, bench (make bench) the peers.
# Debian packages come from apt-get (as root; otherwise it prints the exact
# command and fails); for test and bench, the Python packages pinned in
# requirements.txt go into build/venv, made from the python3 on PATH
# ($VENV_PYTHON to choose another). One line per step; a second run installs
# nothing. It never starts, stops or reconfigures a service of the machine:
# the packages' own services are kept from starting (tests start their own).
set -euo pipefail

# purposes:package:why it is needed, in one list so that the messages can
# say why. A purpose is what `scripts/deps.sh PURPOSE` installs for:
# build (make, make run), test (make test: everything), bench (make bench).
PKGS=(
  "build:build-essential:compiler and make"
  "test,bench:valgrind:valgrind.h for stack registration; memcheck run of the unit tests"
  "test:clang:libFuzzer fuzz targets"
  "test:libclang-rt-14-dev:sanitizer and libFuzzer runtimes for clang"
  "test:clang-format:format check in make test"
  "test:python3-pytest:the smoke subset of the Python suites on Debian's /usr/bin/python3"
  "test:python3-dev:headers for the binding built for Debian's /usr/bin/python3"
  "test:python3-greenlet:the binding on Debian's /usr/bin/python3 (greenlet per app call)"
  "test:curl:integration tests use a real client"
  "test,bench:wrk:benchmarks and load tests"
  "test,bench:apache2-utils:ab, for instruction-count benchmarks"
  "test,bench:nginx:peer in benchmarks"
  "test:testssl.sh:tests/suites/tls_testssl.sh scans spindle's default TLS configuration"
  "test,bench:strace:syscall counts in benchmarks (bench/run's syscalls workload)"
  "test:gcc-aarch64-linux-gnu:cross-build of the aarch64 context switch"
  "test:libc6-dev-arm64-cross:cross-build of the aarch64 context switch"
  "test:qemu-user:runs the aarch64 coroutine test"
  "build:libsqlite3-dev:the SQLite session store"
  "test,bench:redis-server:the Redis session store's tests"
  "build:libhiredis-dev:the Redis session store"
  "build:libssl-dev:OpenSSL 3, the TLS transport (-lssl -lcrypto)"
  "build:libnghttp2-dev:HTTP/2 framing and HPACK (src/server/h2_*.c)"
  "build:liburing-dev:the io_uring loop backend (src/loop/loop_uring.c, --io-backend uring)"
  "build:zlib1g-dev:permessage-deflate for WebSockets (src/server/ws/ws_deflate.c, -lz)"
  "test,bench:nghttp2-client:h2load and nghttp, the HTTP/2 tests and bench workload"
  "test,bench:h2o:HTTP/2 peer in the bench h2 workload"
  "bench:uwsgi:WSGI peer in the keepalive, close and wsgi workloads (issue 8's targets)"
  "bench:uwsgi-plugin-python3:uWSGI's Python 3 plugin, for that peer"
  "test:chromium:headless-browser tests of the status page and the chat example"
  "test:nodejs:the llhttp differential (node's own http parser; no npm package is used)"
  "test,bench:openssl:self-signed certificates for the TLS tests of spindle.patch()"
  "test,bench:postgresql:the benchmark harness starts its own PostgreSQL (smoke-tested)"
  "build:pkg-config:the packaging test builds the README example through spindle.pc"
  "test:man-db:the packaging test renders spindle(1) with man -l"
  "test:groff-base:the packaging test renders spindle(1) with man -l"
  "test:python3-pip:the wheel (pip wheel) and its test venv"
  "test:python3-wheel:the wheel (pip wheel --no-build-isolation)"
  "test:python3-venv:the wheel test installs into a fresh venv"
  "test:python3-setuptools:setup.py, the wheel and python3-spindle"
  "test:dpkg-dev:the Debian packages (dpkg-buildpackage)"
  "test:debhelper:the Debian packages (dh)"
  "test:dh-python:python3-spindle (dh_python3, pybuild)"
  "test:python3-all-dev:python3-spindle for every supported Python 3"
  "test:fakeroot:dpkg-buildpackage as a user"
  "test:lintian:the Debian packages are checked with lintian"
)

debian_packages() {
  local purpose=$1 missing=() entry rest pkg m
  for entry in "${PKGS[@]}"; do
    rest=${entry#*:}
    pkg=${rest%%:*}
    if [ "$purpose" = test ] || [[ ",${entry%%:*}," == *",$purpose,"* ]] || [[ ",${entry%%:*}," == *",build,"* ]]; then
      if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
      fi
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "spindle: deps ($purpose): Debian packages present"
    return 0
  fi

  if [ "$(id -u)" -ne 0 ]; then
    echo "spindle: deps ($purpose): these Debian packages are missing:" >&2
    for entry in "${PKGS[@]}"; do
      rest=${entry#*:}
      for m in "${missing[@]}"; do
        [ "${rest%%:*}" = "$m" ] && echo "  $m  (${rest#*:})" >&2
      done
    done
    echo "install them with:  sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi

  echo "spindle: deps ($purpose): installing ${#missing[@]} Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Packages such as nginx, redis-server and postgresql start a service of
  # the machine when installed: a policy-rc.d that refuses (Debian's own
  # switch for this) keeps them stopped, and goes once the install is done.
  local policy=/usr/sbin/policy-rc.d own_policy=
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# spindle scripts/deps.sh: no service starts during the install\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    own_policy=1
  fi
  # The package lists may be absent or stale on a fresh machine.
  local rc=0
  { apt-get update -qq || apt-get update; } >/dev/null &&
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >build/apt-install.log 2>&1 || rc=$?
  [ -n "$own_policy" ] && rm -f "$policy"
  if [ $rc -ne 0 ]; then
    tail -20 build/apt-install.log >&2
    echo "spindle: apt-get install failed (whole log: build/apt-install.log)" >&2
    exit 1
  fi
}

# build/venv from requirements.txt. A stamp holds the hash of the file and the
# interpreter's version: while both are unchanged nothing is installed.
python_packages() {
  local venv=build/venv base=${VENV_PYTHON:-python3} log=build/venv-install.log want
  command -v "$base" >/dev/null || {
    echo "spindle: no $base on PATH to make build/venv from (set VENV_PYTHON=/path/to/python3)" >&2
    exit 1
  }
  want="$(sha256sum requirements.txt | cut -d' ' -f1) $("$base" -c 'import sys; print(sys.version.split()[0])')"
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.installed" 2>/dev/null)" = "$want" ]; then
    echo "spindle: deps: $venv is up to date with requirements.txt"
    return 0
  fi
  if [ ! -x "$venv/bin/python" ]; then
    "$base" -m venv "$venv" || { echo "spindle: '$base -m venv $venv' failed" >&2; exit 1; }
  fi
  echo "spindle: deps: installing the pinned Python packages (requirements.txt) into $venv"
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q -r requirements.txt >"$log" 2>&1; then
    grep -v "is ignored: it is neither" "$log" | tail -20 >&2
    echo "spindle: pip could not install requirements.txt into $venv (whole log: $log)" >&2
    exit 1
  fi
  echo "$want" >"$venv/.installed"
}

cd "$(dirname "$0")/.."
purpose=${1:-build}
case $purpose in
  build | test | bench) ;;
  *)
    echo "usage: scripts/deps.sh [build|test|bench]  (not '$purpose')" >&2
    exit 2
    ;;
esac
mkdir -p build
debian_packages "$purpose"
[ "$purpose" = build ] || python_packages
