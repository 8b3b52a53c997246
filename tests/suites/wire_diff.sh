#!/bin/bash
# wire_diff.sh — the request corpus against its hand-written verdict table
# (tests/corpus/expected.tsv) and every corpus and unit-test request through
# Python's h11 as well (tests/diff/h11_diff.py). Builds its own small verdict
# driver from src/http_*.c. Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
corpus=../shared/corpus
if [ ! -d "$corpus" ]; then
  echo "wire_diff: $corpus not found"
  echo "0 passed, 1 failed"
  exit 1
fi
if ! cc -std=c11 -D_GNU_SOURCE -O1 -Wall -Wextra -Werror -Isrc -o "$work/verdict" \
  tests/diff/verdict.c src/http/http_parse.c src/http/http_chunked.c src/http/http_chars.c; then
  echo "0 passed, 1 failed"
  exit 1
fi
/usr/bin/python3 tests/diff/h11_diff.py "$work/verdict" "$corpus" "$work/cases"
