#!/bin/bash
# wire_diff.sh — the request corpus against its hand-written verdict table
# (tests/corpus/expected.tsv) and every corpus and unit-test request through
# Python's h11 as well (tests/diff/h11_diff.py). Builds its own small verdict
# driver from src/http/http_*.c. The corpus is tests/corpus (or
# $SPINDLE_CORPUS); without it the suite fails. All of it runs twice: on the parser copy the CPU picks
# (AVX2 where it has it) and on the baseline one (SPINDLE_HTTP_NO_AVX2=1).
# Ends with "N passed, N failed".
. "$(dirname "$0")/lib/preamble.sh"

need_corpus || finish
cc -std=c11 -D_GNU_SOURCE -O1 -Wall -Wextra -Werror -Isrc -o "$work/verdict" \
  tests/diff/verdict.c src/http/http_parse.c src/http/http_chunked.c src/http/http_chars.c \
  || abort "cannot build tests/diff/verdict.c"
counted "$PY" tests/diff/h11_diff.py "$work/verdict" "$CORPUS" "$work/cases"
counted env SPINDLE_HTTP_NO_AVX2=1 "$PY" tests/diff/h11_diff.py "$work/verdict" \
  "$CORPUS" "$work/cases.base"
finish
