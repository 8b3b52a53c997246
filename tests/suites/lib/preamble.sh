# tests/suites/lib/preamble.sh — sourced (never run) by every tests/suites/*.sh:
#
#   . "$(dirname "$0")/lib/preamble.sh"
#
# Sets `set -uo pipefail`, moves to the repository root, and gives:
#   ok MSG / bad MSG         count one passed / failed check (and print it)
#   skip N MSG               count N skipped checks (and print MSG)
#   check MSG CMD...         run CMD: ok MSG if it exits 0, else bad MSG
#   counted CMD...           run CMD (its output shown), add its own closing
#                            "N passed, N failed" line to the counts; an exit
#                            other than 0 with no failure counted is one failure
#   abort MSG                print MSG, count a failure and finish (a suite
#                            that cannot run at all)
#   finish                   print "N passed, N failed" (", N skipped" if any)
#                            and exit 1 if anything failed, else 0
#   free_port                a free 127.0.0.1 TCP port, a new one on each call
#                            (tests/integration/lib/ports.py, through proctools.py)
#   $PY                      the tests' Python: build/venv/bin/python (scripts/deps.sh
#                            makes it), or $SPINDLE_TEST_PYTHON
#   need_corpus              0 if $CORPUS (the request corpus in tests/corpus, or
#                            $SPINDLE_CORPUS) exists; else counts a failure,
#                            says so, and returns 1
#   $work                    a scratch directory, removed at exit; $pid (if a
#                            suite sets it) is SIGKILLed at exit. A suite that
#                            sets its own EXIT trap calls _preamble_exit in it.
# scripts/test.sh reads the last "N passed, N failed" line of a suite.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.." || exit 1

SUITE=$(basename "$0" .sh)
PY=${SPINDLE_TEST_PYTHON:-$PWD/build/venv/bin/python}
pass=0
fail=0
skipped=0
pid=
work=$(mktemp -d)

_preamble_exit() {
  [ -n "${pid:-}" ] && kill -KILL "$pid" 2>/dev/null
  [ -n "${work:-}" ] && rm -rf "$work"
}
trap _preamble_exit EXIT

ok() {
  echo "ok   $1"
  pass=$((pass + 1))
}
bad() {
  echo "FAIL $1"
  fail=$((fail + 1))
}
skip() {
  echo "skip $2"
  skipped=$((skipped + $1))
}

check() {
  local msg=$1
  shift
  if "$@"; then ok "$msg"; else bad "$msg"; fi
}

counted() {
  local log="$work/.counted.$$.$RANDOM" rc line
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
  rm -f "$log"
  if [[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
    pass=$((pass + BASH_REMATCH[1]))
    fail=$((fail + BASH_REMATCH[2]))
    if [ "$rc" -ne 0 ] && [ "${BASH_REMATCH[2]}" -eq 0 ]; then fail=$((fail + 1)); fi
  elif [ "$rc" -ne 0 ]; then
    fail=$((fail + 1))
  fi
  return "$rc"
}

finish() {
  if [ "$skipped" -ne 0 ]; then
    echo "$pass passed, $fail failed, $skipped skipped"
  else
    echo "$pass passed, $fail failed"
  fi
  [ "$fail" -eq 0 ] && exit 0
  exit 1
}

abort() {
  echo "$SUITE: $1"
  fail=$((fail + 1))
  finish
}

free_port() {
  "$PY" -c 'import sys; sys.path.insert(0, "tests/integration")
from lib.proctools import free_port; print(free_port())'
}

# The request corpus: gunicorn's and llhttp's test requests, kept in the
# repository with their licences (tests/corpus/README.md).
CORPUS=${SPINDLE_CORPUS:-tests/corpus}
# The number of corpus cases (rows of the hand-written verdict table).
corpus_cases() {
  grep -c '^[^#[:space:]]' tests/corpus/expected.tsv
}
need_corpus() {
  [ -d "$CORPUS/gunicorn-requests" ] && [ -d "$CORPUS/llhttp-request-fixtures" ] && return 0
  bad "$SUITE: the request corpus is not in $CORPUS (tests/corpus/gunicorn-requests and llhttp-request-fixtures are part of the repository)"
  return 1
}
