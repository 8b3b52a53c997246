#!/bin/bash
# packaging.sh — `make install` into a throw-away DESTDIR: every installed
# path, the soname and the exported symbols (sp_* only), spindle.pc, the
# README's C example built through pkg-config and served over HTTP from the
# installed shared library, spindle(1) against --help, --version, and
# `make uninstall`. Ends with "N passed, N failed".
. "$(dirname "$0")/lib/preamble.sh"

V=$(cat VERSION)
MAJOR=${V%%.*}
root=$work/root
make --no-print-directory -s MODE=release install DESTDIR="$root" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; abort "make install DESTDIR=$root failed"; }
ok "make install DESTDIR=\$work/root (PREFIX /usr/local)"

# 1. Every path, and nothing else.
p=$root/usr/local
want="bin/spindle
include/spindle.h
include/spindle_bus.h
include/spindle_features.h
lib/libspindle.a
lib/libspindle.so
lib/libspindle.so.$MAJOR
lib/libspindle.so.$V
lib/pkgconfig/spindle.pc
lib/systemd/system/spindle.service
lib/systemd/system/spindle.socket
share/doc/spindle/README.md
share/doc/spindle/examples/spindle.conf
share/man/man1/spindle.1"
got=$(cd "$p" && find . \( -type f -o -type l \) | sed 's|^\./||' | LC_ALL=C sort)
if [ "$got" = "$want" ]; then ok "installed exactly the $(echo "$want" | wc -l) files"; else
  diff <(echo "$want") <(echo "$got")
  bad "installed files differ from the list (< wanted, > installed)"
fi
check "bin/spindle is executable" test -x "$p/bin/spindle"
check "libspindle.so -> libspindle.so.$MAJOR -> libspindle.so.$V" \
  test "$(readlink "$p/lib/libspindle.so")" = "libspindle.so.$MAJOR" -a \
  "$(readlink "$p/lib/libspindle.so.$MAJOR")" = "libspindle.so.$V"
soname=$(readelf -d "$p/lib/libspindle.so.$V" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
check "the soname is libspindle.so.$MAJOR (got $soname)" test "$soname" = "libspindle.so.$MAJOR"
others=$(nm -D --defined-only "$p/lib/libspindle.so.$V" | awk '{print $3}' | grep -v '^sp_')
nsp=$(nm -D --defined-only "$p/lib/libspindle.so.$V" | awk '{print $3}' | grep -c '^sp_')
if [ -z "$others" ] && [ "$nsp" -gt 50 ]; then ok "nm -D: $nsp symbols exported, all sp_*"; else
  bad "nm -D exports non-sp_ symbols: $(echo $others | head -c 300) ($nsp sp_*)"
fi
check "the unit starts /usr/local/bin/spindle, Type=notify, ExecReload HUP" \
  grep -q '^ExecStart=/usr/local/bin/spindle ' "$p/lib/systemd/system/spindle.service" \
  && grep -q '^Type=notify' "$p/lib/systemd/system/spindle.service" \
  && grep -q '^ExecReload=/bin/kill -HUP \$MAINPID' "$p/lib/systemd/system/spindle.service"

# 2. pkg-config, then the README's example built and run as a user would.
export PKG_CONFIG_PATH=$p/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
check "pkg-config --modversion spindle is $V" test "$(pkg-config --modversion spindle)" = "$V"
check "pkg-config --static --libs adds the private libraries" \
  bash -c "pkg-config --static --libs spindle | grep -q -- '-lsqlite3 -lhiredis'"
awk '/^## A handler/{on=1} on&&/^```c/{grab=1;next} grab&&/^```/{exit} grab{print}' README.md >"$work/hello.c"
port=$(free_port)
sed -i "s/127\.0\.0\.1:8080/127.0.0.1:$port/" "$work/hello.c"
cd "$work" || exit 1
# shellcheck disable=SC2046
if cc -o hello hello.c $(pkg-config --cflags --libs spindle) 2>cc.log; then
  ok "cc -o hello hello.c \$(pkg-config --cflags --libs spindle)"
else
  cat cc.log
  bad "the README example does not build through pkg-config"
fi
cd - >/dev/null || exit 1
lib=$(LD_LIBRARY_PATH=$p/lib ldd "$work/hello" | awk '/libspindle/{print $3}')
check "hello loads the installed $lib" test "$lib" = "$p/lib/libspindle.so.$MAJOR"
LD_LIBRARY_PATH=$p/lib "$work/hello" >"$work/hello.log" 2>&1 &
pid=$!
body=
for _ in $(seq 50); do
  body=$(curl -s --max-time 2 "http://127.0.0.1:$port/hello?who=installed") && [ -n "$body" ] && break
  sleep 0.1
done
check "it answers over HTTP: '$body'" test "$body" = "Hello, installed!"
kill "$pid" && wait "$pid" 2>/dev/null
pid=

# 3. The manual page: renders, lists every flag of --help, is the binary's own.
man_txt=$(MANWIDTH=100 man --warnings -l "$p/share/man/man1/spindle.1" 2>"$work/man.err")
if [ -n "$man_txt" ] && [ ! -s "$work/man.err" ]; then ok "man -l renders spindle.1 without warnings"; else
  cat "$work/man.err"
  bad "man -l spindle.1 failed or warned"
fi
flags=$("$p/bin/spindle" --help | grep -oE '^  --[a-z0-9-]+' | sed 's/^  //')
missing=$(for f in $flags; do grep -qE -- "(^|[^a-z-])$f( |$)" <<<"$man_txt" || echo "$f"; done)
if [ -z "$missing" ]; then ok "spindle(1) lists all $(echo "$flags" | wc -l) flags of --help"; else
  bad "spindle(1) misses: $missing"
fi
check "spindle.1 is what the installed binary prints (--print-man)" \
  cmp -s "$p/share/man/man1/spindle.1" <("$p/bin/spindle" --print-man)

# 4. --version: number, revision, switch, backend; the same from Python.
ver=$("$p/bin/spindle" --version)
rev=$(git describe --always --dirty 2>/dev/null)
check "spindle --version starts 'spindle $V (API'" grep -q "^spindle $V (API [0-9]*)$" <<<"$ver"
if [ -n "$rev" ]; then
  check "--version names the git revision $rev" grep -qx "git revision: $rev" <<<"$ver"
else
  skip 1 "not a git checkout: no revision to compare"
fi
check "--version names the coroutine switch and the loop" \
  bash -c 'grep -qE "^coroutine switch: (asm \((x86_64|aarch64)\)|ucontext)$" <<<"$1" &&
    grep -qE "^event loop: auto \(default\) = (io_uring|epoll), falling back to epoll .*; --io-backend epoll or uring to choose$" <<<"$1"' _ "$ver"
if make --no-print-directory -s MODE=release python >/dev/null 2>&1; then
  pyver=$(PYTHONPATH=build/python "$PY" -m spindle --version)
  check "python3 -m spindle --version says the same" test "$pyver" = "$ver"
else
  bad "make python failed: no binding to ask --version"
fi

# 5. PREFIX=/usr: the paths follow; then make uninstall leaves nothing.
make --no-print-directory -s MODE=release install PREFIX=/usr DESTDIR="$work/usr" >/dev/null 2>&1
check "PREFIX=/usr: /usr/bin/spindle, and the unit starts it" \
  grep -q '^ExecStart=/usr/bin/spindle ' "$work/usr/usr/lib/systemd/system/spindle.service"
check "PREFIX=/usr: spindle.pc says prefix=/usr" grep -qx 'prefix=/usr' "$work/usr/usr/lib/pkgconfig/spindle.pc"
make --no-print-directory -s MODE=release uninstall DESTDIR="$root" >/dev/null 2>&1
left=$(find "$root" \( -type f -o -type l \))
check "make uninstall removes every installed file" test -z "$left"

finish
