#!/bin/bash
# fuzz_smoke.sh — builds the libFuzzer targets (make fuzz-build), then:
#  1. regression: every input of each target's checked-in corpus
#     (tests/fuzz/corpus/TARGET/) through that target once;
#  2. every target (HTTP parser, chunked decoder, WebSocket frames, PROXY
#     protocol header, whole connection, TLS accept) for a fixed number of random iterations ($FUZZ_RUNS),
#     seeded with its checked-in corpus, the request corpus (tests/corpus,
#     or $SPINDLE_CORPUS) and a few requests, in a scratch
#     corpus directory.
# A crash or a broken invariant (the targets abort) fails. Ends "N passed, N failed".
. "$(dirname "$0")/lib/preamble.sh"

RUNS=${FUZZ_RUNS:-200000}
# -j2: the targets are independent (built serially, the build was two thirds of the suite).
if ! make --no-print-directory -j2 fuzz-build >"$work/build.log" 2>&1; then
  tail -20 "$work/build.log"
  abort "make fuzz-build failed"
fi
fuzz=build/fuzz
checked_in=tests/fuzz/corpus

# show_artifacts: the inputs libFuzzer saved for a failure, in base64.
show_artifacts() {
  for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
    [ -f "$a" ] && echo "input (base64): $(base64 -w0 "$a")"
    rm -f "$a"
  done
}

# 1. The checked-in regression corpora, one pass/fail per target.
for bin in "$fuzz"/fuzz_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  dir=$checked_in/$name
  if [ ! -d "$dir" ] || [ -z "$(ls -A "$dir")" ]; then
    bad "$name: no checked-in corpus in $dir"
    continue
  fi
  n=$(find "$dir" -type f | wc -l)
  # Files, not the directory: libFuzzer then runs each once and never writes to it.
  if (cd "$work" && find "$OLDPWD/$dir" -type f -print0 | sort -z |
    xargs -0 "$OLDPWD/$bin" -artifact_prefix="$work/" >"$work/$name.replay.log" 2>&1); then
    ok "$name: $n checked-in inputs replayed"
  else
    bad "$name: replaying $dir"
    grep -E "^Running: |ERROR|SUMMARY" "$work/$name.replay.log" | tail -30
    show_artifacts
  fi
done

# 2. Random runs. Seeds: every corpus request (converted) and a few chunked bodies.
mkdir -p "$work/parse" "$work/chunked" "$work/ws_frame"
if [ -d "$CORPUS" ]; then
  "$PY" tests/corpus/extract.py "$CORPUS" "$work/cases" >/dev/null
  n=0
  for f in "$work"/cases/*/*/*; do
    n=$((n + 1))
    cp "$f" "$work/parse/seed_$n"
  done
else
  echo "$SUITE: $CORPUS not found: seeding without its $(corpus_cases) cases"
fi
printf 'GET / HTTP/1.1\r\nHost: h\r\n\r\n' >"$work/parse/get"
printf '5\r\nhello\r\n0\r\n\r\n' >"$work/chunked/a"
printf '5;a="b\\"c";d=e\r\nhello\r\n6 ; x\r\n world\r\n0\r\nT: v\r\n\r\nGET' >"$work/chunked/b"
printf '00ffff\r\n' >"$work/chunked/c"

# Every other target starts from the parser's seeds or from nothing.
mkdir -p "$work/conn" && cp "$work"/parse/* "$work/conn/" 2>/dev/null

for bin in "$fuzz"/fuzz_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  t=${name#fuzz_}
  t=${t#http_}
  mkdir -p "$work/$t"
  [ -d "$checked_in/$name" ] && cp "$checked_in/$name"/* "$work/$t/" 2>/dev/null
  runs=$RUNS
  # The whole-connection target runs the server per input: fewer of them.
  [ "$t" = conn ] && runs=$((RUNS / 4))
  # The TLS accept target signs a ServerHello for every valid ClientHello.
  [ "$t" = tls_accept ] && runs=$((RUNS / 20))
  if (cd "$work" && "$OLDPWD/$bin" -runs="$runs" -max_len=4096 -artifact_prefix="$work/" \
    "$work/$t" >"$work/$t.log" 2>&1); then
    ok "$name: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$work/$t.log")"
  else
    bad "$name"
    tail -30 "$work/$t.log"
    show_artifacts
  fi
done
finish
