#!/bin/bash
# Installs the Debian packages spindle's build, tests and benchmarks need,
# only those missing. As root it runs apt-get; otherwise it prints exactly
# what is missing and the command that installs it, and fails.
set -euo pipefail

# package -> why it is needed (kept in one list so the message can say).
PKGS=(
  "build-essential:compiler and make"
  "valgrind:valgrind.h for stack registration; memcheck run of the unit tests"
  "clang:libFuzzer fuzz targets"
  "libclang-rt-14-dev:sanitizer and libFuzzer runtimes for clang"
  "clang-format:format check in make test"
  "python3-pytest:integration tests"
  "python3-h11:differential parser test"
  "python3-dev:headers for the WSGI extension"
  "python3-greenlet:WSGI binding (greenlet per app call)"
  "curl:integration tests use a real client"
  "wrk:benchmarks and load tests"
  "apache2-utils:ab, for instruction-count benchmarks"
  "nginx:peer in benchmarks"
  "testssl.sh:tests/suites/tls_testssl.sh scans spindle's default TLS configuration"
  "strace:syscall counts in benchmarks (bench/run's syscalls workload)"
  "gcc-aarch64-linux-gnu:cross-build of the aarch64 context switch"
  "libc6-dev-arm64-cross:cross-build of the aarch64 context switch"
  "qemu-user:runs the aarch64 coroutine test"
  "python3-flask:WSGI framework tests"
  "python3-django:WSGI framework tests"
  "python3-webpy:WSGI framework tests"
  "python3-bottle:WSGI framework tests"
  "python3-falcon:WSGI framework tests"
  "python3-uvicorn:the ASGI framework tests' reference server; ASGI peer in bench/run"
  "python3-starlette:ASGI framework tests (tests/integration/asgi_apps)"
  "python3-fastapi:ASGI framework tests; the FastAPI app of bench/run's asgi workload"
  "python3-quart:ASGI framework tests"
  "python3-multipart:FastAPI's form and file uploads in the ASGI framework tests"
  "python3-websockets:the ASGI tests' WebSocket client; uvicorn's WebSocket protocol"
  "python3-httptools:uvicorn's fast HTTP parser (bench/run's uvicorn peer)"
  "python3-uvloop:uvicorn's fast event loop (bench/run's uvicorn peer)"
  "python3-hypercorn:ASGI peer in bench/run"
  "python3-daphne:ASGI peer in bench/run"
  "libsqlite3-dev:the SQLite session store"
  "redis-server:the Redis session store's tests"
  "libhiredis-dev:the Redis session store"
  "libssl-dev:OpenSSL 3, the TLS transport (-lssl -lcrypto)"
  "libnghttp2-dev:HTTP/2 framing and HPACK (src/server/h2_*.c)"
  "liburing-dev:the io_uring loop backend (src/loop/loop_uring.c, --io-backend uring)"
  "nghttp2-client:h2load and nghttp, the HTTP/2 tests and bench workload"
  "python3-h2:HTTP/2 client of the conformance tests"
  "python3-hyperframe:raw HTTP/2 frames of the conformance tests"
  "python3-hpack:header blocks of the conformance tests"
  "h2o:HTTP/2 peer in the bench h2 workload"
  "chromium:headless-browser tests of the status page and the chat example"
  "nodejs:WebSocket conformance tests (npm ws), the llhttp differential, the parked workload's node peer"
  "python3-matplotlib:charts of the benchmark harness (bench/run)"
  "python3-mako:the Mako template app of the benchmark harness"
  "python3-sqlalchemy:the database apps of the benchmark harness; spindle.patch() tests"
  "python3-psycopg2:the PostgreSQL apps of the benchmark harness; spindle.patch() tests"
  "python3-redis:redis-py against a real redis-server in the spindle.patch() tests"
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

missing=()
for entry in "${PKGS[@]}"; do
  pkg=${entry%%:*}
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

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
