#!/bin/bash
# wheel.sh — spindle-server as pip users get it: the sdist and the wheel built in
# isolation from a clean copy, twine- and auditwheel-checked, installed into a
# fresh venv where `spindle` and spindle.run() serve WSGI and ASGI; plus the
# greenlet message, the -dev probe and Debian's setuptools. "N passed, N failed".
. "$(dirname "$0")/lib/preamble.sh"

V=$(cat VERSION)
[ -x "$PY" ] || abort "no $PY: run scripts/deps.sh (make deps)"
"$PY" -c 'import build, twine, auditwheel' 2>/dev/null ||
  abort "build, twine and auditwheel are missing from $PY's environment (make deps: requirements.txt)"
# Two cores, shared with the other suites: two compilers at a time (setup.py reads MAX_JOBS).
export MAX_JOBS=${MAX_JOBS:-2}
# Either would leave the spindle command out of the wheel (setup.py: console_scripts).
unset PYBUILD_NAME SPINDLE_COMMAND

# The tracked and new (not ignored) files as they are now, as debian.sh does:
# nothing of build/ (no objects, no build/python) comes along. With
# SPINDLE_WHEEL_FROM=REV, `git archive REV` instead (a shared checkout where
# others' edits are half done).
src=$work/src/spindle-$V
mkdir -p "$src"
if [ -n "${SPINDLE_WHEEL_FROM:-}" ]; then
  git archive "$SPINDLE_WHEEL_FROM" | tar -xf - -C "$src" || abort "git archive $SPINDLE_WHEEL_FROM failed"
else
  git ls-files -co --exclude-standard | tar -cf - -T - | tar -xf - -C "$src"
fi

# ---- sdist and wheel, with build isolation ----------------------------------
start=$SECONDS
if "$PY" -m build -o "$work/dist" "$src" >"$work/build.log" 2>&1; then
  ok "python -m build: the sdist, then the wheel from it, isolated ($((SECONDS - start)) s)"
else
  tail -30 "$work/build.log"
  abort "python -m build failed (whole log above)"
fi
sdist=$work/dist/spindle_server-$V.tar.gz
whl=$(ls "$work"/dist/spindle_server-"$V"-*.whl 2>/dev/null | head -1)
check "the sdist is spindle_server-$V.tar.gz" test -f "$sdist"
check "the wheel is spindle_server-$V-...: $(basename "${whl:-none}")" test -n "$whl"
check "the build ran with -j$MAX_JOBS (setup.py's parallel compile)" \
  grep -q "Building spindle._spindle with $MAX_JOBS jobs" "$work/build.log"

# What building needs is in the sdist (the wheel above was built from it).
listing=$(tar -tzf "$sdist" | sed "s|^spindle_server-$V/||")
need="setup.py pyproject.toml MANIFEST.in VERSION REVISION README.md include/spindle.h
  src/cli/parse.c src/coro/coro_switch_x86_64.S python/_spindle/module.c python/spindle/__init__.py
  python/spindle/_cli.py"
[ -f LICENSE ] && need="$need LICENSE"
for f in $need; do
  check "the sdist holds $f" grep -qx "$f" <<<"$listing"
done
check "the sdist holds every src/ and include/ file of the tree ($(grep -c '^src/\|^include/' <<<"$listing"))" \
  bash -c 'diff <(cd "$1" && find src include -type f | sort) <(grep "^src/.*[^/]$\|^include/.*[^/]$" <<<"$2" | sort)' \
  _ "$src" "$listing"
check "the sdist holds nothing of build/ but egg_info's SOURCES.txt" \
  bash -c '! grep "^build/.*[^/]$" <<<"$1" | grep -qv "egg-info/SOURCES.txt$"' _ "$listing"

# The metadata: name, the version from VERSION, the licence, classifiers,
# python_requires, greenlet, the console command.
meta=$("$PY" -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1])
print(z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode())' "$whl")
for field in "Name: spindle-server" "Version: $V" "Requires-Python: >=3.9" "Requires-Dist: greenlet" \
  "License-Expression: MIT" "Classifier: Topic :: Internet :: WWW/HTTP :: WSGI :: Server" "Summary: "; do
  check "METADATA has '$field'" grep -q "^$field" <<<"$meta"
done
eps=$("$PY" -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1])
print(z.read(next(n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt"))).decode())' "$whl")
check "entry_points.txt: spindle = spindle._cli:main" grep -q "^spindle = spindle._cli:main" <<<"$eps"
[ -f LICENSE ] && check "the wheel carries LICENSE" \
  bash -c 'unzip -l "$1" | grep -q "dist-info/licenses/LICENSE"' _ "$whl"

# ---- twine, auditwheel -------------------------------------------------------
if "$PY" -m twine check --strict "$sdist" "$whl" >"$work/twine.log" 2>&1; then
  ok "twine check --strict: the sdist and the wheel pass"
else
  cat "$work/twine.log"
  bad "twine check --strict"
fi
# auditwheel show: which system libraries the wheel needs, which policy that
# allows (here manylinux_2_34: Debian 12's glibc 2.36 and OpenSSL 3).
# show lists the libraries with versioned symbols; -v's lddtree has them all.
"$PY" -m auditwheel -v show "$whl" >"$work/show.log" 2>&1
tag=$(tr '\n' ' ' <"$work/show.log" | grep -o 'constrains the platform tag to "[^"]*"' | cut -d'"' -f2)
echo "     auditwheel show: $(grep -o 'lib[a-z0-9]*\.so\.[0-9]*' "$work/show.log" | sort -u | tr '\n' ' ')"
check "auditwheel show names the platform the wheel allows (${tag:-none})" test -n "$tag"
for lib in libssl libcrypto libnghttp2 libhiredis libsqlite3 liburing; do
  check "auditwheel show: the wheel needs $lib (from the system)" grep -q "\"$lib\.so" "$work/show.log"
done
if PATH=$(dirname "$PY"):$PATH command -v patchelf >/dev/null; then
  if PATH=$(dirname "$PY"):$PATH "$PY" -m auditwheel repair -w "$work/repaired" "$whl" >"$work/repair.log" 2>&1; then
    fixed=$(ls "$work"/repaired/*.whl 2>/dev/null | head -1)
    ok "auditwheel repair: $(basename "$fixed") (the system libraries bundled)"
    check "the repaired wheel bundles libssl, libnghttp2, libhiredis, libsqlite3, liburing" \
      bash -c 'l=$(unzip -l "$1"); for x in libssl libnghttp2 libhiredis libsqlite3 liburing; do
        grep -q "spindle_server.libs/$x" <<<"$l" || exit 1; done' _ "$fixed"
  else
    tail -3 "$work/repair.log"
    bad "auditwheel repair"
  fi
else
  skip 2 "auditwheel repair needs patchelf (requirements.txt pins it: make deps)"
fi

# ---- installed into a fresh venv of the python3 on PATH ------------------------
base=$("$PY" -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')
"$base" -m venv "$work/venv" || abort "$base -m venv failed"
vpy=$work/venv/bin/python
if "$vpy" -m pip install -q "$whl" >"$work/pip.log" 2>&1; then
  ok "pip install the wheel into a fresh venv of $base (greenlet comes with it)"
else
  cat "$work/pip.log"
  abort "the wheel does not install into the venv"
fi
check "the venv has the spindle command" test -x "$work/venv/bin/spindle"

# Serves CMD... (run from $work/app) on $port until curl gets a body; checks it
# is $want; stops it by its PID with TERM (bounded) and checks the status 0.
serve_check() {
  local what=$1 want=$2 path=$3 body= i
  shift 3
  (cd "$work/app" && exec "$@") >"$work/serve.log" 2>&1 &
  pid=$!
  for i in $(seq 100); do
    body=$(curl -s --max-time 2 "http://127.0.0.1:$port$path") && [ -n "$body" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ "$body" = "$want" ]; then ok "$what: '$body'"; else
    tail -5 "$work/serve.log"
    bad "$what: got '$body', wanted '$want'"
  fi
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    bad "$what: still running 10 s after TERM"
  else
    wait "$pid"
    check "$what: stops on TERM with status 0" test $? -eq 0
  fi
  pid=
}

# The apps and the script, outside the tree: nothing of the checkout on the path.
mkdir -p "$work/app"
cat >"$work/app/wsgi_app.py" <<'PYEOF'
def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"wsgi from the wheel, " + environ["PATH_INFO"].encode()]
PYEOF
cat >"$work/app/asgi_app.py" <<'PYEOF'
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"asgi from the wheel, " + scope["path"].encode()})
PYEOF
cat >"$work/app/serve.py" <<'PYEOF'
# spindle.run() as a script calls it: the app object, or a "module:attr" string.
import sys

import spindle
from wsgi_app import application

if sys.argv[1] == "object":
    sys.exit(spindle.run(application, bind=sys.argv[2], workers=1, keepalive_timeout=5))
sys.exit(spindle.run("asgi_app:app", bind=sys.argv[2], workers=2, max_body_size="1m", interface="asgi"))
PYEOF

where=$(cd "$work/app" && "$vpy" -c 'import spindle, os; print(os.path.dirname(spindle.__file__))')
check "spindle is imported from the venv ($where)" test "${where#"$work/venv/"}" != "$where"
ver=$(cd "$work/app" && "$work/venv/bin/spindle" --version)
check "spindle --version: 'spindle $V (API', the switch and the loop" \
  bash -c 'grep -q "^spindle $1 (API" <<<"$2" && grep -q "^coroutine switch: " <<<"$2" &&
    grep -q "^event loop: auto (default) = " <<<"$2"' _ "$V" "$ver"
check "spindle --help lists the shared and the Python flags" \
  bash -c '"$1" --help | grep -q -- "--max-concurrent-app-calls"' _ "$work/venv/bin/spindle"
"$work/venv/bin/spindle" >/dev/null 2>&1
check "spindle with no application exits 2" test $? -eq 2

port=$(free_port)
serve_check "spindle wsgi_app:application serves WSGI" "wsgi from the wheel, /w" /w \
  "$work/venv/bin/spindle" wsgi_app:application --bind "127.0.0.1:$port" --workers 1
port=$(free_port)
serve_check "spindle asgi_app:app serves ASGI (detected)" "asgi from the wheel, /a" /a \
  "$work/venv/bin/spindle" asgi_app:app --bind "127.0.0.1:$port" --workers 1 --keepalive-timeout 5
port=$(free_port)
serve_check "spindle.run(application, bind=..., keepalive_timeout=5) from a script" \
  "wsgi from the wheel, /r" /r "$vpy" serve.py object "127.0.0.1:$port"
port=$(free_port)
serve_check "spindle.run(\"asgi_app:app\", workers=2, max_body_size=\"1m\", interface=\"asgi\")" \
  "asgi from the wheel, /s" /s "$vpy" serve.py string "127.0.0.1:$port"

# Without greenlet: what to install, not PyCapsule_Import's words.
"$vpy" -m pip uninstall -q -y greenlet >/dev/null 2>&1
msg=$(cd "$work/app" && "$vpy" -c 'import spindle' 2>&1 | tail -1)
check "without greenlet, import spindle: '$msg'" \
  test "$msg" = "ImportError: spindle needs greenlet: pip install greenlet"
check "pip uninstall -y spindle-server" "$vpy" -m pip uninstall -q -y spindle-server
check "... and the spindle command goes with it" test ! -e "$work/venv/bin/spindle"

# ---- the probe: a missing -dev package is named before compiling --------------
# A hiredis.h that fails to compile, first on the include path, stands for
# libhiredis-dev not installed.
mkdir -p "$work/fake/hiredis"
echo '#error not installed' >"$work/fake/hiredis/hiredis.h"
out=$(cd "$src" && CFLAGS="-I$work/fake" "$PY" setup.py -q build_ext --build-temp "$work/probe-t" \
  --build-lib "$work/probe-l" 2>&1)
check "without hiredis.h the build stops, naming apt-get install libhiredis-dev" \
  grep -q "apt-get install libhiredis-dev$" <<<"$out"
check "... before compiling spindle's sources" test ! -e "$work/probe-t/src"

# ---- Debian's setuptools (66, for pybuild) reads the same setup.py ------------
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import setuptools' 2>/dev/null; then
  mkdir -p "$work/deb"
  if (cd "$src" && /usr/bin/python3 setup.py -q egg_info --egg-base "$work/deb" >"$work/deb.log" 2>&1); then
    pkg=$(cat "$work"/deb/*.egg-info/PKG-INFO)
    check "Debian's setuptools: PKG-INFO has 'License: MIT' and the MIT classifier" \
      bash -c 'grep -q "^License: MIT" <<<"$1" && grep -q "^Classifier: License :: OSI Approved :: MIT License" <<<"$1"' \
      _ "$pkg"
    check "Debian's setuptools: the spindle console command" \
      grep -q "^spindle = spindle._cli:main" "$work"/deb/*.egg-info/entry_points.txt
    # Under pybuild (PYBUILD_NAME, as debian/rules exports it) /usr/bin/spindle
    # is the C server's, package spindle's: python3-spindle has no command.
    rm -rf "$work/deb" && mkdir -p "$work/deb"
    (cd "$src" && PYBUILD_NAME=spindle /usr/bin/python3 setup.py -q egg_info --egg-base "$work/deb" >/dev/null 2>&1)
    check "under pybuild no console command (the C spindle owns /usr/bin/spindle)" \
      bash -c '! grep -qs "^spindle = " "$1"/deb/*.egg-info/entry_points.txt' _ "$work"
  else
    tail -5 "$work/deb.log"
    bad "/usr/bin/python3 setup.py egg_info (Debian's setuptools)"
  fi
else
  skip 2 "no Debian /usr/bin/python3 with setuptools"
fi

finish
