#!/bin/bash
# Installs what spindle's build, tests and benchmarks need, only what is
# missing: the Debian packages below with apt-get (as root; otherwise it
# prints what is missing and the command that installs it, and fails), then
# the Python packages pinned in requirements.txt into the virtual
# environment build/venv, made from the python3 on PATH ($VENV_PYTHON to
# choose another). A second run installs nothing.
set -euo pipefail

# package -> why it is needed (kept in one list so the message can say).
PKGS=(
  "build-essential:compiler and make"
  "valgrind:valgrind.h for stack registration; memcheck run of the unit tests"
  "clang:libFuzzer fuzz targets"
  "libclang-rt-14-dev:sanitizer and libFuzzer runtimes for clang"
  "clang-format:format check in make test"
  "python3-pytest:the smoke subset of the Python suites on Debian's /usr/bin/python3"
  "python3-dev:headers for the binding built for Debian's /usr/bin/python3"
  "python3-greenlet:the binding on Debian's /usr/bin/python3 (greenlet per app call)"
  "curl:integration tests use a real client"
  "wrk:benchmarks and load tests"
  "apache2-utils:ab, for instruction-count benchmarks"
  "nginx:peer in benchmarks"
  "testssl.sh:tests/suites/tls_testssl.sh scans spindle's default TLS configuration"
  "strace:syscall counts in benchmarks (bench/run's syscalls workload)"
  "gcc-aarch64-linux-gnu:cross-build of the aarch64 context switch"
  "libc6-dev-arm64-cross:cross-build of the aarch64 context switch"
  "qemu-user:runs the aarch64 coroutine test"
  "libsqlite3-dev:the SQLite session store"
  "redis-server:the Redis session store's tests"
  "libhiredis-dev:the Redis session store"
  "libssl-dev:OpenSSL 3, the TLS transport (-lssl -lcrypto)"
  "libnghttp2-dev:HTTP/2 framing and HPACK (src/server/h2_*.c)"
  "liburing-dev:the io_uring loop backend (src/loop/loop_uring.c, --io-backend uring)"
  "nghttp2-client:h2load and nghttp, the HTTP/2 tests and bench workload"
  "h2o:HTTP/2 peer in the bench h2 workload"
  "chromium:headless-browser tests of the status page and the chat example"
  "nodejs:the llhttp differential (node's own http parser; no npm package is used)"
  "openssl:self-signed certificates for the TLS tests of spindle.patch()"
  "postgresql:the benchmark harness starts its own PostgreSQL (smoke-tested)"
  "pkg-config:the packaging test builds the README example through spindle.pc"
  "man-db:the packaging test renders spindle(1) with man -l"
  "groff-base:the packaging test renders spindle(1) with man -l"
  "python3-pip:the wheel (pip wheel) and its test venv"
  "python3-wheel:the wheel (pip wheel --no-build-isolation)"
  "python3-venv:the wheel test installs into a fresh venv"
  "python3-setuptools:setup.py, the wheel and python3-spindle"
  "dpkg-dev:the Debian packages (dpkg-buildpackage)"
  "debhelper:the Debian packages (dh)"
  "dh-python:python3-spindle (dh_python3, pybuild)"
  "python3-all-dev:python3-spindle for every supported Python 3"
  "fakeroot:dpkg-buildpackage as a user"
  "lintian:the Debian packages are checked with lintian"
)

debian_packages() {
  local missing=() entry pkg m
  for entry in "${PKGS[@]}"; do
    pkg=${entry%%:*}
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0

  if [ "$(id -u)" -ne 0 ]; then
    echo "spindle: these Debian packages are missing:" >&2
    for entry in "${PKGS[@]}"; do
      for m in "${missing[@]}"; do
        [ "${entry%%:*}" = "$m" ] && echo "  $m  (${entry#*:})" >&2
      done
    done
    echo "install them with:  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi

  echo "spindle: installing missing packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # The package lists may be absent or stale on a fresh machine.
  apt-get update -qq || apt-get update
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian's nginx package starts a system nginx on port 80; the benchmarks
  # start their own, so stop the packaged one if it came up.
  for svc in nginx redis-server postgresql; do
    if [[ " ${missing[*]} " == *" $svc "* ]]; then
      (systemctl stop "$svc" || service "$svc" stop || pkill -x "$svc") >/dev/null 2>&1 || true
    fi
  done
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
    return 0
  fi
  mkdir -p build
  if [ ! -x "$venv/bin/python" ]; then
    "$base" -m venv "$venv" || { echo "spindle: '$base -m venv $venv' failed" >&2; exit 1; }
  fi
  echo "spindle: installing the pinned Python packages (requirements.txt) into $venv"
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check -q -r requirements.txt >"$log" 2>&1; then
    grep -v "is ignored: it is neither" "$log" | tail -20 >&2
    echo "spindle: pip could not install requirements.txt into $venv (whole log: $log)" >&2
    exit 1
  fi
  echo "$want" >"$venv/.installed"
}

cd "$(dirname "$0")/.."
debian_packages
python_packages
