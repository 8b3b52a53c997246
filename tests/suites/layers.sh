#!/bin/bash
# layers.sh — the include rules between the layers (scripts/check_layers.py):
# the real tree must keep them, and the checker must catch what it exists
# for: planted into a copy of the tree, an upward include (http -> server),
# a server-core -> feature include, a feature -> other feature include, a
# stale un-qualified include and each seam of the exchange (a protocol
# named or tested where it must not be) fail it, naming the file and line,
# and so do the binding's (past its C boundary, between its wsgi/, asgi/ and
# common/ rooms); a downward include adds nothing. Ends with "N passed, N failed".
. "$(dirname "$0")/lib/preamble.sh"

CHECK=scripts/check_layers.py

# 1. The real tree.
if out=$("$PY" $CHECK 2>&1); then
  ok "the tree keeps the layer rules: $out"
else
  echo "$out"
  bad "the tree breaks the layer rules (the lines above)"
fi

# copy: a fresh copy of the tree in $work/t.
copy() {
  rm -rf "$work/t"
  mkdir -p "$work/t/python"
  cp -r src include "$work/t/" && cp -r python/_spindle "$work/t/python/"
}

# plant NAME FILE INCLUDE: appends `#include "INCLUDE"` to FILE of a fresh
# copy; the checker must fail and name FILE:LINE and INCLUDE.
plant() {
  local name=$1 file=$2 inc=$3
  copy
  local line=$(($(wc -l <"$work/t/$file") + 1))
  echo "#include \"$inc\"" >>"$work/t/$file"
  local out rc
  out=$("$PY" $CHECK --root "$work/t" 2>&1)
  rc=$?
  if [ $rc -eq 1 ] && grep -qF "$file:$line: includes \"$inc\"" <<<"$out"; then
    ok "$name: $(grep -F "$file:$line:" <<<"$out")"
  else
    echo "$out"
    bad "$name: the checker (exit $rc) did not report $file:$line including \"$inc\""
  fi
}

# 2. An upward include: http (pure codecs) including the server.
plant "upward include" src/http/http_chars.c server/server.h
# 3. The server core including a feature.
plant "server core -> feature" src/server/router.c server/static/static_http.h
# 4. One feature including another.
plant "feature -> feature" src/server/static/static.c server/ws/ws.h
# 5. A stale un-qualified include (the layout before the folders).
plant "un-qualified include" src/server/router.c http_chars.h

# 6b. The binding past the C boundary: a header of the core it may not see,
#     and the request's insides (handler.h: embed.h's accessors instead).
plant "binding -> the core's own header" python/_spindle/common/hub.c server/server.h
plant "binding -> handler.h" python/_spindle/wsgi/wsgi.c server/handler.h
plant "binding -> the bus's insides" python/_spindle/common/bus.c server/bus/bus.h
# 6d. The fence behind the boundary: a header the binding includes that
#     brings the request's struct along (embed.h as it was: handler.h).
plant "boundary header -> handler.h" src/server/embed.h server/handler.h
plant "bus boundary -> bus.h" src/server/bus/bus_embed.h server/bus/bus.h
# 6c. The binding's rooms: common/ knows neither interface, and neither
#     interface knows the other; its own headers are folder-qualified.
plant "binding common -> wsgi" python/_spindle/common/hub.c wsgi/wsgi.h
plant "binding common -> asgi" python/_spindle/common/job_table.c asgi/asgi.h
plant "binding wsgi -> asgi" python/_spindle/wsgi/wsgi.c asgi/asgi.h
plant "binding asgi -> wsgi" python/_spindle/asgi/asgi_http.c wsgi/wsgi.h
plant "binding un-qualified include" python/_spindle/common/hub.c hints.h

# 7. The exchange's seams: the server core calling HTTP/2 by name, and a
#    feature testing req->xops instead of req_http_major.
seam() {
  local name=$1 file=$2 code=$3 want=$4
  copy
  local line=$(($(wc -l <"$work/t/$file") + 1))
  echo "$code" >>"$work/t/$file"
  local out rc
  out=$("$PY" $CHECK --root "$work/t" 2>&1)
  rc=$?
  if [ $rc -eq 1 ] && grep -qF "$file:$line: $want" <<<"$out"; then
    ok "$name: $(grep -F "$file:$line:" <<<"$out" | cut -c1-120)"
  else
    echo "$out"
    bad "$name: the checker (exit $rc) did not report $file:$line ($want)"
  fi
}
seam "server core -> HTTP/2 by name" src/server/server.c "static void x(conn *c) { h2_conn_drop(c); }" "h2_conn_drop("
seam "binding common -> WSGI by name" python/_spindle/common/hub.c "static void x(hub *h, pyjob *j) { wsgi_run(h, j); }" "wsgi_run("
seam "binding common -> ASGI by name" python/_spindle/common/bus.c "static int x(void) { return asgi_bus_pending(); }" "asgi_bus_pending("
seam "ASGI HTTP cycle -> the WebSocket's receive" python/_spindle/asgi/asgi_http.c "static PyObject *x(acycle *c) { return c->is_ws ? asgi_ws_receive(c) : NULL; }" "asgi_ws_receive("
seam "a feature testing xops" src/server/static/static.c "static int x(sp_req *r) { return r->xops != 0; }" "xops"
# 8. request.c and response.c are the same for every protocol: a protocol
#    branch put back (a test of xops or of the version, HTTP/1.1's framing,
#    a write on the connection, a protocol's table by name) fails.
seam "a protocol branch in request.c" src/server/request.c "static int x(sp_req *r) { return r->xops != 0; }" "xops"
seam "a table compared in response.c" src/server/response.c "static int x(sp_res *r) { return r->req->xops == &http1_ops; }" "xops"
seam "a version test in response.c" src/server/response.c "static int x(sp_res *r) { return req_http_major(r->req) == 2; }" "req_http_major("
seam "HTTP/1.1's framing in response.c" src/server/response.c "static int x(sp_res *r) { return r->out.framing == HTTP_OUT_CHUNKED; }" "out.framing"
seam "a write on the connection in response.c" src/server/response.c "static int x(sp_res *r) { return (int)conn_write(0, r->c, \"\", 0, 0); }" "conn_write("
seam "a protocol's table named outside it" src/server/static/static.c "static const void *x = &h2_ops;" "h2_ops"

# 6. A downward include is no violation: the output is what it was.
copy
before=$("$PY" $CHECK --root "$work/t" 2>&1 | grep -v '^check_layers:')
echo '#include "base/log.h"' >>"$work/t/src/http/http_chars.c"
after=$("$PY" $CHECK --root "$work/t" 2>&1 | grep -v '^check_layers:')
if [ "$before" = "$after" ]; then
  ok "a downward include (http -> base) adds no violation"
else
  diff <(echo "$before") <(echo "$after")
  bad "a downward include (http -> base) was reported"
fi

finish
