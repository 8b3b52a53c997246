#!/bin/bash
# debian.sh — the Debian packages: a copy of the tree (nothing is written
# beside the checkout) built with dpkg-buildpackage -us -uc -b; each
# package's files (dpkg-deb -c); lintian without errors; then the four
# unpacked with dpkg-deb -x and run from there: spindle serves, the README
# example builds through libspindle-dev's spindle.pc and runs on
# libspindle0, python3 -m spindle serves WSGI. Ends with "N passed, N failed".
. "$(dirname "$0")/lib/preamble.sh"

V=$(cat VERSION)
MAJOR=${V%%.*}
command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null && command -v lintian >/dev/null ||
  abort "needs dpkg-dev, debhelper, dh-python and lintian (scripts/deps.sh)"
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
ARCH=$(dpkg-architecture -qDEB_HOST_ARCH)

check "debian/changelog's version is VERSION ($V)" test "$(dpkg-parsechangelog -S Version)" = "$V"
if rev=$(git rev-parse --short HEAD 2>/dev/null); then
  check "git archive fills REVISION with the commit ($rev)" \
    test "$(git archive HEAD REVISION | tar -xOf -)" = "$rev"
fi

# The tracked and new (not ignored) files, as they are now, into $work.
src=$work/src/spindle-$V
mkdir -p "$src"
git ls-files -co --exclude-standard | tar -cf - -T - | tar -xf - -C "$src"
start=$SECONDS
# -j2: the two cores (dpkg-buildpackage builds serially unless told).
if (cd "$src" && dpkg-buildpackage -us -uc -b -j2 >"$work/build.log" 2>&1); then
  ok "dpkg-buildpackage -us -uc -b -j2 ($((SECONDS - start)) s)"
else
  tail -30 "$work/build.log"
  abort "dpkg-buildpackage failed (log above)"
fi
deb() { echo "$work/src/$1_${V}_$ARCH.deb"; }
for p in spindle libspindle0 libspindle-dev python3-spindle; do
  check "built $(basename "$(deb $p)")" test -f "$(deb $p)"
done

# has PKG PATH...: dpkg-deb -c lists every PATH (a symlink as "PATH -> TARGET").
has() {
  local pkg=$1 list missing=
  shift
  list=$(dpkg-deb -c "$(deb "$pkg")" | awk '{$1=$2=$3=$4=$5=""; sub(/^ +/, ""); print}')
  for f in "$@"; do grep -qxF "./$f" <<<"$list" || missing+=" $f"; done
  if [ -z "$missing" ]; then ok "$pkg holds $*"; else bad "$pkg lacks$missing"; fi
}
has spindle usr/bin/spindle usr/share/man/man1/spindle.1.gz lib/systemd/system/spindle.service \
  lib/systemd/system/spindle.socket etc/spindle.conf usr/share/doc/spindle/examples/spindle.conf
has libspindle0 "usr/lib/$MA/libspindle.so.$V" "usr/lib/$MA/libspindle.so.$MAJOR -> libspindle.so.$V"
has libspindle-dev usr/include/spindle.h usr/include/spindle_bus.h \
  usr/include/spindle_features.h "usr/lib/$MA/libspindle.a" \
  "usr/lib/$MA/libspindle.so -> libspindle.so.$MAJOR" "usr/lib/$MA/pkgconfig/spindle.pc"
pyext=$(dpkg-deb -c "$(deb python3-spindle)" | grep -o 'usr/lib/python3/dist-packages/spindle/_spindle[^ ]*\.so')
has python3-spindle usr/lib/python3/dist-packages/spindle/__main__.py "${pyext:-no extension}"
dpkg-deb -e "$(deb spindle)" "$work/ctrl"
check "/etc/spindle.conf is a conffile" grep -qx /etc/spindle.conf "$work/ctrl/conffiles"

lint=$(lintian "$work/src/spindle_${V}_$ARCH.changes" 2>&1 | grep -v 'root privileges')
errors=$(grep -c '^E:' <<<"$lint")
warnings=$(grep -c '^W:' <<<"$lint")
if [ "$errors" -eq 0 ]; then ok "lintian: no errors ($warnings warnings)"; else
  echo "$lint"
  bad "lintian: $errors errors"
fi
[ "$warnings" -gt 0 ] && echo "$lint"

# The packages unpacked, and run from there.
root=$work/root
for p in spindle libspindle0 libspindle-dev python3-spindle; do dpkg-deb -x "$(deb $p)" "$root"; done
unit=$root/lib/systemd/system/spindle.service
check "the unit: Type=notify, ExecStart=/usr/bin/spindle, ExecReload HUP" \
  bash -c 'grep -qx Type=notify "$1" && grep -q "^ExecStart=/usr/bin/spindle " "$1" &&
    grep -qx "ExecReload=/bin/kill -HUP \$MAINPID" "$1"' _ "$unit"
if command -v systemd-analyze >/dev/null; then
  # Not installed here, so the binary and the man page are not found: any
  # other complaint (an unknown key, a bad value) fails.
  sa=$(cd "$root/lib/systemd/system" && timeout 30 systemd-analyze verify ./spindle.socket \
    ./spindle.service 2>&1 | grep -vE 'is not executable|man spindle\(1\)')
  if [ -z "$sa" ]; then ok "systemd-analyze verify: the units parse"; else
    echo "$sa"
    bad "systemd-analyze verify complains about the units"
  fi
fi
check "the packaged spindle --version says spindle $V" \
  bash -c "'$root/usr/bin/spindle' --version | grep -q '^spindle $V (API'"
check "man -l renders the packaged spindle.1.gz" \
  bash -c "MANWIDTH=80 man -l '$root/usr/share/man/man1/spindle.1.gz' | grep -q -- '--graceful-timeout'"

# get PORT PATH WANT: polls until the server answers WANT (5 s).
get() {
  local body=
  for _ in $(seq 50); do
    body=$(curl -s --max-time 2 "http://127.0.0.1:$1$2") && [ -n "$body" ] && break
    sleep 0.1
  done
  echo "$body"
}
stop() { kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=; }

port=$(free_port)
"$root/usr/bin/spindle" --bind "127.0.0.1:$port" --workers 1 >"$work/spindle.log" 2>&1 &
pid=$!
check "the packaged spindle serves the demo" test "$(get "$port" /)" = "Hello world!"
stop

awk '/^## A handler/{on=1} on&&/^```c/{grab=1;next} grab&&/^```/{exit} grab{print}' README.md >"$work/hello.c"
port=$(free_port)
sed -i "s/127\.0\.0\.1:8080/127.0.0.1:$port/" "$work/hello.c"
# shellcheck disable=SC2046
if PKG_CONFIG_PATH=$root/usr/lib/$MA/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root \
  cc -o "$work/hello" "$work/hello.c" $(PKG_CONFIG_PATH=$root/usr/lib/$MA/pkgconfig \
    PKG_CONFIG_SYSROOT_DIR=$root pkg-config --cflags --libs spindle) 2>"$work/cc.log"; then
  ok "the README example builds against libspindle-dev through pkg-config"
else
  cat "$work/cc.log"
  bad "the README example does not build against libspindle-dev"
fi
LD_LIBRARY_PATH=$root/usr/lib/$MA "$work/hello" >"$work/hello.log" 2>&1 &
pid=$!
check "it runs on libspindle0 and answers" test "$(get "$port" '/hello?who=deb')" = "Hello, deb!"
stop

mkdir -p "$work/app"
printf '%s\n' 'def application(environ, start_response):' \
  '    start_response("200 OK", [("Content-Type", "text/plain")])' \
  '    return [b"wsgi from the deb\n"]' >"$work/app/app.py"
port=$(free_port)
(cd "$work/app" && exec env PYTHONPATH="$root/usr/lib/python3/dist-packages" /usr/bin/python3 \
  -m spindle app:application --bind "127.0.0.1:$port" --workers 1) >"$work/py.log" 2>&1 &
pid=$!
check "python3-spindle serves a WSGI app" test "$(get "$port" /)" = "wsgi from the deb"
stop

finish
