#!/bin/bash
# docs_reference.sh — the documentation stays true to the code: docs/cli.md
# is exactly what `build/spindle --print-reference` prints (the flag table of
# src/cli/flags.c as Markdown, made by src/cli/man.c), every relative
# `](path)` link of README.md and docs/*.md names a file that exists, and the
# README stays short (at most 220 lines). Ends with "N passed, N failed".
. "$(dirname "$0")/lib/preamble.sh"

# 1. docs/cli.md against the generator. Until the --print-reference row is in
# the flag table, the same function (cli_reference in man.c) is called
# through build/libspindle.a.
regen="build/spindle --print-reference >docs/cli.md"
if [ ! -x build/spindle ]; then
  bad "no build/spindle: run make"
elif build/spindle --print-reference >"$work/cli.md" 2>"$work/ref.err"; then
  how="build/spindle --print-reference"
else
  how="cli_reference() of build/libspindle.a (build/spindle has no --print-reference yet)"
  regen="tests/suites/docs_reference.sh --write"
  printf '#include <stdio.h>\nvoid cli_reference(FILE *out);\nint main(void) { cli_reference(stdout); return 0; }\n' \
    >"$work/ref.c"
  if ! cc -o "$work/ref" "$work/ref.c" build/libspindle.a -lssl -lcrypto -lpthread -ldl -lm -lsqlite3 -lhiredis \
    -lnghttp2 -luring 2>"$work/cc.log" || ! "$work/ref" >"$work/cli.md"; then
    cat "$work/cc.log"
    bad "cannot run the reference generator (build/libspindle.a: run make)"
    : >"$work/cli.md"
  fi
fi
if [ "${1:-}" = "--write" ] && [ -s "$work/cli.md" ]; then
  cp "$work/cli.md" docs/cli.md && echo "wrote docs/cli.md from $how"
fi
if [ -s "$work/cli.md" ]; then
  if cmp -s docs/cli.md "$work/cli.md"; then
    ok "docs/cli.md is what $how prints ($(wc -l <docs/cli.md) lines)"
  else
    diff -u docs/cli.md "$work/cli.md" | head -20
    bad "docs/cli.md differs from $how: regenerate it with $regen (never edit it by hand)"
  fi
fi
# Every flag of the table has its row (a row that failed to print would
# otherwise pass as "the same as the generator").
missing=$(build/spindle --help 2>/dev/null | sed -n 's/^  \(--[a-z0-9-]*\).*/\1/p' | while read -r f; do
  grep -q "^| \`$f[ \`]" docs/cli.md || echo "$f"
done)
if [ -z "$missing" ]; then ok "every flag of --help has a row in docs/cli.md"; else bad "not in docs/cli.md: $missing"; fi

# 2. Relative links: README.md and docs/*.md, each from its own directory.
broken=$("$PY" - README.md docs/*.md <<'PY'
import os, re, sys
for page in sys.argv[1:]:
    text = re.sub(r"```.*?```", "", open(page).read(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = os.path.normpath(os.path.join(os.path.dirname(page), target.split("#")[0]))
        if not os.path.exists(path):
            print("%s: %s" % (page, target))
PY
)
n=$(cat README.md docs/*.md | grep -o '](' | wc -l)
if [ -z "$broken" ]; then ok "every relative link of README.md and docs/*.md resolves ($n links)"; else
  echo "$broken"
  bad "broken links: $(echo "$broken" | wc -l)"
fi

# 3. The README stays an overview.
lines=$(wc -l <README.md)
if [ "$lines" -le 220 ]; then ok "README.md has $lines lines (at most 220)"; else
  bad "README.md has $lines lines: at most 220; move the detail to a page of docs/"
fi
for s in "make run" "make test"; do
  check "README.md names '$s'" grep -qF "$s" README.md
done

finish
