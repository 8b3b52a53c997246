#!/bin/bash
# Runs every test suite after `make test` has built the trees: unit tests
# (optimized, ASan+UBSan, valgrind), the aarch64 coroutine test under qemu,
# the suites in tests/suites/*.sh (each ends with "N passed, N failed"),
# and the pytest integration tests on the pinned environment's Python
# (build/venv, scripts/deps.sh), then a smoke subset of the Python suites on
# Debian's /usr/bin/python3 with Debian's packages. Ends with the total
# "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
PY=$PWD/build/venv/bin/python
[ -x "$PY" ] || { echo "spindle: $PY is missing: run scripts/deps.sh (make test does)"; exit 1; }

LOGS=build/test-logs
mkdir -p "$LOGS"
total_pass=0
total_fail=0
total_skipped=0
failed_suites=()

# suite NAME CMD...: runs CMD, shows its output, adds its closing counts.
suite() {
  local name=$1
  shift
  local log="$LOGS/$name.log" start=$SECONDS
  echo "== $name"
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local line
  line=$(grep -E '([0-9]+) passed, ([0-9]+) failed' "$log" | tail -1)
  local p=0 f=0 sk=0
  if [[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
    p=${BASH_REMATCH[1]}
    f=${BASH_REMATCH[2]}
    # tests/suites/lib/preamble.sh's finish: "N passed, N failed, N skipped".
    [[ $line =~ failed,\ ([0-9]+)\ skipped ]] && sk=${BASH_REMATCH[1]}
  else
    # pytest's own closing line: "3 failed, 216 passed, 1 error in 50.1s".
    line=$(grep -E '[0-9]+ (passed|failed|errors?)\b.* in [0-9.]+s' "$log" | tail -1)
    [[ $line =~ ([0-9]+)\ passed ]] && p=${BASH_REMATCH[1]}
    [[ $line =~ ([0-9]+)\ failed ]] && f=${BASH_REMATCH[1]}
    [[ $line =~ ([0-9]+)\ error ]] && f=$((f + BASH_REMATCH[1]))
  fi
  # A command that fails without counting a failure still fails the run.
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  total_pass=$((total_pass + p))
  total_fail=$((total_fail + f))
  total_skipped=$((total_skipped + sk))
  [ "$f" -ne 0 ] && failed_suites+=("$name")
  echo "-- $name: $p passed, $f failed$([ "$sk" -ne 0 ] && echo ", $sk skipped") ($((SECONDS - start)) s)"
}

# unit_all DIR: every unit binary in DIR, one summary.
unit_all() {
  local dir=$1 p=0 f=0 rc=0
  for t in "$dir"/test_*; do
    [ -x "$t" ] || continue
    out=$("$t" 2>&1)
    r=$?
    echo "$out"
    line=$(echo "$out" | tail -1)
    if [[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
      p=$((p + BASH_REMATCH[1]))
      f=$((f + BASH_REMATCH[2]))
    fi
    if [ $r -ne 0 ] && ! [[ $line =~ [1-9][0-9]*\ failed ]]; then f=$((f + 1)); fi
  done
  echo "units: $p passed, $f failed"
  [ $f -eq 0 ]
}

format_check() {
  if make --no-print-directory format-check; then
    echo "format: 1 passed, 0 failed"
  else
    echo "format: run 'make format' to fix the files above"
    echo "format: 0 passed, 1 failed"
    return 1
  fi
}

valgrind_units() {
  local p=0 f=0
  for t in build/tests/test_coro build/tests/test_loop; do
    [ -x "$t" ] || continue
    out=$(UNIT_NO_DEATH=1 valgrind -q --error-exitcode=1 --leak-check=full \
      --errors-for-leak-kinds=definite "$t" 2>&1)
    r=$?
    echo "$out"
    line=$(echo "$out" | grep -E 'passed, [0-9]+ failed' | tail -1)
    if [[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
      p=$((p + BASH_REMATCH[1]))
      f=$((f + BASH_REMATCH[2]))
    fi
    if [ $r -ne 0 ] && ! [[ $line =~ [1-9][0-9]*\ failed ]]; then f=$((f + 1)); fi
  done
  echo "valgrind: $p passed, $f failed"
  [ $f -eq 0 ]
}

aarch64_coro() {
  make --no-print-directory cross-aarch64 || return 1
  qemu-aarch64 build/aarch64/test_coro
}

suite format format_check
suite unit-release unit_all build/tests
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allow_user_segv_handler=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 suite unit-asan unit_all build/asan/tests
suite unit-valgrind valgrind_units
if command -v aarch64-linux-gnu-gcc >/dev/null && command -v qemu-aarch64 >/dev/null \
  && [ -f src/coro/coro_switch_aarch64.S ]; then
  suite unit-aarch64-qemu aarch64_coro
fi
for s in tests/suites/*.sh; do
  [ -x "$s" ] || continue
  suite "$(basename "$s" .sh)" "$s"
done
# The two long pytest passes run on two pytest-xdist workers, a test file
# per worker at a time (--dist loadfile: a file's module fixtures stay in one
# process); each worker takes its servers' ports from a range of its own
# (tests/integration/lib/ports.py). Most of their time is spent waiting on
# servers and clocks, so two at once halve it on two cores.
# SPINDLE_TEST_WORKERS=0 runs them in one process.
XDIST=(-n "${SPINDLE_TEST_WORKERS:-2}" --dist loadfile)
if ls tests/integration/test_*.py >/dev/null 2>&1; then
  suite integration "$PY" -m pytest -q -p no:cacheprovider "${XDIST[@]}" tests/integration
  # The core suites once more on epoll (the main pass ran on the default,
  # io_uring, where this machine can set it up; SPINDLE_IO_BACKEND reaches
  # every server the fixtures start): HTTP/1.1, keep-alive,
  # pipelining, limits, static, WebSocket, workers and reload, TLS, HTTP/2,
  # the Python binding's hubs (ASGI, WSGI), which drive the loop themselves,
  # WebSocket broadcasts (chat), PROXY headers, resets, hostile traffic and
  # apps (slow clients, floods, fd and memory faults, the inline WSGI call
  # and its body reads). Not the WSGI suites of Python's own semantics
  # (errors, late headers, environ reuse, edges, the stall watchdog): they
  # do no I/O of their own. About 1.5 minutes.
  if "$PY" -c 'import ctypes,os,sys; fd=ctypes.CDLL(None).syscall(425,4,ctypes.create_string_buffer(120)); sys.exit(fd<0 or os.close(fd))'; then
    SPINDLE_IO_BACKEND=epoll suite integration-epoll "$PY" -m pytest -q -p no:cacheprovider "${XDIST[@]}" \
      tests/integration/test_keepalive.py tests/integration/test_rejections.py \
      tests/integration/test_bodies.py tests/integration/test_http_edge.py \
      tests/integration/test_static.py tests/integration/test_websocket.py \
      tests/integration/test_workers.py tests/integration/test_timeouts.py \
      tests/integration/test_ops_reload.py tests/integration/test_tls.py \
      tests/integration/test_h2_clients.py tests/integration/test_h2_conformance.py \
      tests/integration/test_concurrency.py tests/integration/test_routes.py \
      tests/integration/test_fairness.py tests/integration/test_signals.py \
      tests/integration/test_asgi_http.py tests/integration/test_wsgi_concurrency.py \
      tests/integration/test_asgi_ws.py tests/integration/test_chat.py \
      tests/integration/test_proxy_protocol.py tests/integration/test_faults_reset.py \
      tests/integration/test_h2_attacks.py \
      tests/integration/test_ops_hardening.py tests/integration/test_faults_fds.py \
      tests/integration/test_faults_alloc.py tests/integration/test_ops_workers.py \
      tests/integration/test_wsgi_inline.py \
      tests/integration/test_wsgi_inline_hostile.py tests/integration/test_wsgi_input_edges.py
  else
    echo "== integration-epoll: not run again: io_uring is unavailable here (io_uring_setup"
    echo "   failed: no kernel support, a seccomp filter or kernel.io_uring_disabled), so the"
    echo "   main pass ran on epoll; io_uring was not tested"
  fi
  # The binding on Debian's own Python 3 and its packages (greenlet 2, pytest
  # 7), built by `make python-system` into build/python-system: WSGI's
  # PEP 3333 rules and edges, the inline call and environ reuse, ASGI over
  # HTTP, the toolkit and per-greenlet locals (no frameworks: those are the
  # pinned environment's), and workers as nobody (a Python under /root, as
  # pyenv's, cannot be read by nobody).
  if [ -x /usr/bin/python3 ] && ls build/python-system/spindle/_spindle*.so >/dev/null 2>&1; then
    suite integration-debian-python /usr/bin/python3 -m pytest -q -p no:cacheprovider \
      tests/integration/test_wsgi_pep3333.py tests/integration/test_wsgi_edge.py \
      tests/integration/test_wsgi_inline.py tests/integration/test_wsgi_environ_reuse.py \
      tests/integration/test_asgi_http.py tests/integration/test_py_toolkit.py \
      tests/integration/test_py_green_local.py tests/integration/test_py_frame_chunk.py \
      "tests/integration/test_py_sessions.py::test_sqlite_as_user"
  else
    suite integration-debian-python sh -c 'echo "build/python-system is not built (make python-system)"; exit 1'
  fi
  # The hostile-input suites once more against the ASan+UBSan binary: the
  # fixtures fail a test whose server printed a sanitizer report.
  if [ -x build/asan/spindle ]; then
    # The hostile-input suites on epoll; the passes below run on the
    # default (io_uring where it can be set up).
    SPINDLE_IO_BACKEND=epoll SPINDLE_BIN=build/asan/spindle suite integration-asan "$PY" -m pytest -q \
      -p no:cacheprovider tests/integration/test_rejections.py tests/integration/test_keepalive.py \
      tests/integration/test_bodies.py tests/integration/test_routes.py
    # The io_uring backend, static files too (not its WebSocket test: the
    # test app is not in the ASan tree)
    SPINDLE_BIN=build/asan/spindle suite integration-asan-uring "$PY" -m pytest -q \
      -p no:cacheprovider tests/integration/test_io_backend.py tests/integration/test_hostile_uring.py \
      -k "not websocket"
    # TLS's misuse, bodies, reload and the 100 MB file (not wss: the test app
    # is not in the ASan tree; not the idle memory: ASan's redzones count)
    SPINDLE_BIN=build/asan/spindle suite integration-asan-tls "$PY" -m pytest -q \
      -p no:cacheprovider tests/integration/test_tls.py -k "not wss and not idle_tls"
    # HTTP/2's frames, floods and limits, and its clients on --root,
    # WebSockets on its streams (RFC 8441; the C app's, ~3 s), and quiet
    # connections' answers after their frame buffer's pages went back (not
    # the buffered-output cap nor the idle WebSockets' and connections'
    # memory: they read RSS, which ASan's shadow memory swells; not their
    # WSGI, ASGI and Early Hints apps: those are not in the ASan tree)
    SPINDLE_BIN=build/asan/spindle suite integration-asan-h2 "$PY" -m pytest -q \
      -p no:cacheprovider tests/integration/test_h2_conformance.py tests/integration/test_h2_attacks.py \
      tests/integration/test_h2_tls.py tests/integration/test_h2_clients.py \
      tests/integration/test_h2_websocket.py tests/integration/test_h2_idle_memory.py \
      -k "not TestWsgi and not TestEarlyHints and not capped and not idle_websockets and not wsgi and not asgi and not hold_no_frame_buffer"
    # The memory bus's shared ring across workers: torn reads, laps, recycled
    # and killed workers (its test app is built in the ASan tree)
    SPINDLE_BIN=build/asan/spindle suite integration-asan-bus "$PY" -m pytest -q \
      -p no:cacheprovider tests/integration/test_bus_shared.py
    # permessage-deflate's negotiation, echoes, bad frames and bombs (the
    # release test app loaded into the ASan binary; not what reads RSS, nor
    # the Python servers)
    SPINDLE_BIN=build/asan/spindle suite integration-asan-ws-deflate "$PY" -m pytest -q \
      -p no:cacheprovider tests/integration/test_ws_deflate.py \
      -k "not memory and not wsgi and not asgi and not uvicorn"
  fi
fi

echo
if [ ${#failed_suites[@]} -ne 0 ]; then
  echo "failing suites: ${failed_suites[*]} (logs in $LOGS/)"
fi
if [ "$total_skipped" -ne 0 ]; then
  echo "$total_pass passed, $total_fail failed, $total_skipped skipped"
else
  echo "$total_pass passed, $total_fail failed"
fi
[ "$total_fail" -eq 0 ]
