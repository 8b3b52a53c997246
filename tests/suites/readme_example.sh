#!/bin/bash
# readme_example.sh — the README's C handler, copied into a file as a new
# user would, compiles and links with exactly the link line the README
# gives (no session stores, no zlib: the core must not pull them in), and serves.
# Ends with "N passed, N failed".
. "$(dirname "$0")/lib/preamble.sh"

# The first ```c block after "## A handler", and the link line after it.
awk '/^## A handler/{on=1} on&&/^```c/{grab=1;next} grab&&/^```/{exit} grab{print}' README.md >"$work/hello.c"
libs=$(sed -n 's/^Link it with `build\/libspindle.a \([^`]*\)`.*/\1/p' README.md | head -1)
if [ -s "$work/hello.c" ] && grep -q 'sp_server_new' "$work/hello.c"; then
  ok "the README has a C example ($(wc -l <"$work/hello.c") lines)"
else
  bad "no C example under '## A handler' in README.md"
fi
if [ -n "$libs" ]; then ok "the README gives the link line: build/libspindle.a $libs"; else bad "no 'Link it with' line in README.md"; fi
# shellcheck disable=SC2086
if cc -std=c11 -Wall -Werror -Iinclude -o "$work/hello" "$work/hello.c" build/libspindle.a $libs 2>"$work/cc.log"; then
  ok "it compiles and links with that line"
else
  cat "$work/cc.log"
  bad "the README's example does not build with: cc -Iinclude hello.c build/libspindle.a $libs"
fi
# A program that uses no sessions must not need the session stores' libraries,
# nor one without WebSockets zlib (permessage-deflate's, in ws_deflate.c only).
if nm -u "$work/hello" 2>/dev/null | grep -qiE 'sqlite3_|redis'; then
  bad "the hello program references SQLite or Redis symbols"
elif [ -x "$work/hello" ]; then
  ok "no SQLite or Redis symbol is linked into it"
fi
if nm -u "$work/hello" 2>/dev/null | grep -qE '^ *U (deflate|inflate)'; then
  bad "the hello program references zlib symbols (deflate/inflate): only WebSockets may"
elif [ -x "$work/hello" ]; then
  ok "no zlib symbol is linked into it"
fi

finish
