#!/bin/bash
# wheel.sh — the Python distribution spindle-server: `pip wheel` builds a
# wheel with complete metadata; it installs into a fresh venv (system site
# packages, for Debian's greenlet) without the network, and from outside the
# tree `python -m spindle` answers --help, --version and serves a WSGI app.
# Ends with "N passed, N failed".
. "$(dirname "$0")/lib/preamble.sh"

PY=/usr/bin/python3
V=$(cat VERSION)
$PY -c 'import pip, wheel, venv' 2>/dev/null || abort "needs python3-pip, python3-wheel and python3-venv (scripts/deps.sh)"

if $PY -m pip wheel --no-build-isolation --no-deps -w "$work/dist" . >"$work/wheel.log" 2>&1; then
  ok "pip wheel --no-build-isolation --no-deps -w dist ."
else
  tail -20 "$work/wheel.log"
  abort "pip wheel failed"
fi
whl=$(ls "$work"/dist/spindle_server-"$V"-*.whl 2>/dev/null | head -1)
check "the wheel is spindle_server-$V-...: $(basename "${whl:-none}")" test -n "$whl"

# The metadata: name, the version from VERSION, license, classifiers, python_requires, greenlet.
meta=$($PY -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1])
print(z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode())' "$whl")
for field in "Name: spindle-server" "Version: $V" "Requires-Python: >=3.9" "Requires-Dist: greenlet" \
  "License: " "Classifier: Topic :: Internet :: WWW/HTTP :: WSGI :: Server" "Summary: "; do
  check "METADATA has '$field'" grep -q "^$field" <<<"$meta"
done

$PY -m venv --system-site-packages "$work/venv" || abort "python3 -m venv failed"
if "$work/venv/bin/python" -m pip install -q --no-index "$whl" >"$work/pip.log" 2>&1; then
  ok "pip install --no-index the wheel into a fresh venv"
else
  cat "$work/pip.log"
  bad "the wheel does not install into the venv"
fi

# From outside the tree: nothing of the checkout on the path.
port=$(free_port)
mkdir -p "$work/app"
cat >"$work/app/app.py" <<'PYEOF'
def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"wsgi from the wheel, " + environ["PATH_INFO"].encode() + b"\n"]
PYEOF
cd "$work/app" || exit 1
vpy=$work/venv/bin/python
where=$($vpy -c 'import spindle, os; print(os.path.dirname(spindle.__file__))')
check "spindle is imported from the venv ($where)" test "${where#"$work/venv/"}" != "$where"
check "python -m spindle --help works from the installed package" \
  bash -c "$vpy -m spindle --help | grep -q -- '--max-concurrent-app-calls'"
ver=$($vpy -m spindle --version)
check "python -m spindle --version: 'spindle $V (API', the switch and the loop" \
  bash -c 'grep -q "^spindle $1 (API" <<<"$2" && grep -q "^coroutine switch: " <<<"$2" &&
    grep -q "^event loop: epoll (default), io_uring " <<<"$2"' _ "$V" "$ver"
$vpy -m spindle app:application --bind "127.0.0.1:$port" --workers 1 >"$work/serve.log" 2>&1 &
pid=$!
body=
for _ in $(seq 50); do
  body=$(curl -s --max-time 2 "http://127.0.0.1:$port/x") && [ -n "$body" ] && break
  sleep 0.1
done
check "it serves the WSGI app: '$body'" test "$body" = "wsgi from the wheel, /x"
kill -TERM "$pid" && wait "$pid"
check "it stops on TERM with status 0" test $? -eq 0
pid=
cd - >/dev/null || exit 1
check "pip uninstall -y spindle-server" "$vpy" -m pip uninstall -q -y spindle-server

finish
