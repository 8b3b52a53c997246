#!/bin/bash
# fuzz_smoke.sh — builds the libFuzzer targets (make fuzz-build) and runs
# every one (HTTP parser, chunked decoder, WebSocket frames, whole
# connection) for a fixed number of iterations, seeded with the request
# corpus and the unit tests' requests, in a scratch corpus directory. A crash
# or a broken invariant (the targets abort) fails. Ends "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."

RUNS=${FUZZ_RUNS:-200000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! make --no-print-directory fuzz-build >"$work/build.log" 2>&1; then
  tail -20 "$work/build.log"
  echo "0 passed, 1 failed"
  exit 1
fi
fuzz=build/fuzz

# Seeds: every corpus request (converted) and a few chunked bodies.
mkdir -p "$work/parse" "$work/chunked"
if [ -d ../shared/corpus ]; then
  /usr/bin/python3 tests/corpus/extract.py ../shared/corpus "$work/cases" >/dev/null
  n=0
  for f in "$work"/cases/*/*/*; do
    n=$((n + 1))
    cp "$f" "$work/parse/seed_$n"
  done
fi
printf 'GET / HTTP/1.1\r\nHost: h\r\n\r\n' >"$work/parse/get"
printf '5\r\nhello\r\n0\r\n\r\n' >"$work/chunked/a"
printf '5;a="b\\"c";d=e\r\nhello\r\n6 ; x\r\n world\r\n0\r\nT: v\r\n\r\nGET' >"$work/chunked/b"
printf '00ffff\r\n' >"$work/chunked/c"

# Every other target starts from the parser's seeds or from nothing.
mkdir -p "$work/conn" && cp "$work"/parse/* "$work/conn/" 2>/dev/null

pass=0
fail=0
for bin in "$fuzz"/fuzz_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  t=${name#fuzz_}
  t=${t#http_}
  mkdir -p "$work/$t"
  runs=$RUNS
  # The whole-connection target runs the server per input: fewer of them.
  [ "$t" = conn ] && runs=$((RUNS / 4))
  if (cd "$work" && "$OLDPWD/$bin" -runs="$runs" -max_len=4096 -artifact_prefix="$work/" \
    "$work/$t" >"$work/$t.log" 2>&1); then
    echo "$name: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$work/$t.log")"
    pass=$((pass + 1))
  else
    echo "$name: FAILED"
    tail -30 "$work/$t.log"
    for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-*; do
      [ -f "$a" ] && echo "input (base64): $(base64 -w0 "$a")"
    done
    fail=$((fail + 1))
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
