#!/usr/bin/python3
"""check_layers.py — the include rules between spindle's layers.

Reads every .c/.h/.S under src/, python/_spindle/ and include/, takes each
quoted `#include "..."` (system headers in <...> are not ours and are not
checked), resolves it the way the compiler does (-Iinclude -Isrc, plus the
including file's own folder for the binding) and checks it against the rules
below. Prints `FILE:LINE: includes "X" (layer L) — LAYER may include only ...`
for each violation and exits 1; else prints a one-line summary and exits 0.

Layers (a folder of src/), and what each may include besides itself:

  base           nothing of ours (leaf helpers: log, buf_pool, sha1, sha256, clock)
  coro           base
  loop           coro, base, spindle.h
  net            loop, coro, base, spindle.h
  http           base (pure byte codecs: no socket, no loop, no spindle.h)
  server         http, net, loop, coro, base, spindle.h — a file directly in
                 src/server/ never includes a feature folder src/server/*/
  server/<feat>  (every subfolder of src/server/: static, ws, session) the
                 server core and everything it may include; never another
                 feature
  process        server (the core, not its features) and below, spindle.h
  cli            everything in src/, spindle.h
  python         (python/_spindle/module.c, the top that wires the two
                 interfaces) python/common, python/wsgi, python/asgi
  python/common  (python/_spindle/common: the hub, its job table, green
                 waits, sessions, spindle.websocket, the bus, hints)
                 nothing of the binding but itself: it knows neither
                 interface, which plug into the hub's table of functions
  python/wsgi    python/common (never python/asgi)
  python/asgi    python/common (never python/wsgi)
                 Every python layer reaches src/ only through the
                 documented headers (PYTHON_HEADERS below) and may include
                 spindle.h and the external greenlet.h / Python.h (found
                 on -I paths outside the tree). Its own headers are
                 written folder-qualified from python/_spindle
                 ("common/binding.h").
  api            (include/spindle.h, the public API) nothing of ours

"spindle.h" (include/) is allowed from loop upwards: loop.h aliases the
public sp_loop; base, coro and http (the pure layers) must not need it.
Nothing in src/ includes python/. A same-folder include is always fine.

Every include must resolve to an existing file. In src/ it must be written
folder-qualified from src/ ("http/http_parse.h"): one that only resolves
relative to the including file's folder, or not at all, is reported.

Usage: check_layers.py [--root DIR]   (DIR: the tree, default this repo)
"""

import argparse
import os
import re
import sys

# Ordered from the bottom up; "server/*" stands for each feature folder.
BELOW_SERVER = ["http", "net", "loop", "coro", "base", "spindle.h"]
RULES = {
    "base": [],
    "coro": ["base"],
    "loop": ["coro", "base", "spindle.h"],
    "net": ["loop", "coro", "base", "spindle.h"],
    "http": ["base"],
    "server": BELOW_SERVER,
    "server/*": ["server"] + BELOW_SERVER,
    "process": ["server"] + BELOW_SERVER,
    "cli": ["process", "server", "server/*"] + BELOW_SERVER,
    # The binding's rooms; src/ headers are governed by PYTHON_HEADERS.
    "python": ["python/common", "python/wsgi", "python/asgi", "spindle.h"],
    "python/common": ["spindle.h"],
    "python/wsgi": ["python/common", "spindle.h"],
    "python/asgi": ["python/common", "spindle.h"],
    "api": [],
}
# The binding's side of the C boundary: the only headers of src/ that
# python/_spindle may include (besides spindle.h and its own): the embed
# API (server/embed.h: serving in steps, the hooks, the request's and the
# response's accessors; the loop it drives and the parsed head come with
# it), the start-up, the log, three pure helpers of http/, and the bus's
# two calls for a binding (bus_embed.h: its subscriber count, ending a recv).
PYTHON_HEADERS = {"src/server/embed.h", "src/cli/cli.h", "src/base/log.h",
                  "src/http/http_chars.h", "src/http/path_norm.h", "src/http/http_trailer.h",
                  "src/server/bus/bus_embed.h"}
# The fence behind the boundary (libuv's private fields): no header the
# binding reaches, directly or through the ones above, may include a header
# of src/server/ that is not one of them — handler.h (struct sp_req,
# sp_res), conn.h, server.h, bus.h hold the server's insides, which the
# binding reads only through embed.h's functions.
FENCED_TOP = "src/server/"
# Quoted includes of headers outside the tree, per layer.
EXTERNAL = {l: {"greenlet.h", "Python.h"} for l in ("python", "python/common", "python/wsgi",
                                                    "python/asgi")}
SOURCE_EXT = (".c", ".h", ".S")

# The seams between the exchange and its protocols (docs/ARCHITECTURE.md,
# "The exchange"): names only some files may use, so that the server core
# closing or stopping HTTP/2 by name, a feature testing how a request is
# wired (xops) instead of asking req_http_major, or a file other than a
# protocol's own naming its table, fails the check; and the binding's
# common room calling WSGI or ASGI by name (a declaration of its own would
# pass the include rules) instead of through the hub's table, and the HTTP
# cycle branching into the WebSocket's receive/send.
SEAMS = [
    (re.compile(r"\bh2_(?!head_)[a-z_]+\s*\("),  # h2_head_*: the pure codec
     re.compile(r"^src/server/(h2_[a-z_]+\.c|h2\.h|exchange\.c|http_conn\.c)$"),
     "calls HTTP/2's driver by name: the server reaches protocols through the exchange "
     "(exchange.h: exchange_conn_drop, exchange_server_stop, exchange_idle_deadline), and "
     "only the HTTP/1.1 driver hands a connection to h2_serve"),
    (re.compile(r"\b(?:wsgi|asgi|environ|env_cache|header_key|input|start_response)_[a-z_]+\s*\("),
     re.compile(r"^(?!python/_spindle/common/)"),
     "calls an interface by name from the binding's common room: the hub runs jobs "
     "through its table of functions (hub_job_fns, which wsgi/ fills), and an interface "
     "sets what common/ calls back (bus_arecv)"),
    (re.compile(r"\b(?:asgi_ws_receive|asend_ws|asgi_ws_app_done)\s*\("),
     re.compile(r"^python/_spindle/asgi/(asgi_ws\.c|asgi_ws_cycle\.c|asgi\.h|asgi_send\.h)$"),
     "calls the WebSocket cycle's receive/send/ending from another file: a websocket "
     "scope's cycle is its own type (asgi_ws_cycle.c), not an is_ws branch in the HTTP one"),
    (re.compile(r"\bxops\b"),
     re.compile(r"^src/server/(request\.c|response\.c|handler\.h)$"),
     "tests how the exchange is wired: ask req_http_major (handler.h)"),
    # A protocol's table is named by its own files only (and the declaration).
    (re.compile(r"\b(?:http1|h2)_ops\b"),
     re.compile(r"^src/server/(http1_ops\.c|http_conn\.c|h2_stream\.c|server\.h)$"),
     "names a protocol's exchange_ops: only that protocol's driver hands it to req_init"),
]
# request.c and response.c are the handler API over every protocol: they
# reach the request's protocol through its table only (r->xops->fn(...)),
# so a protocol branch put back there — a test of xops or of the version it
# stands for, HTTP/1.1's framing state, a read or write on the connection —
# fails the check. Each pattern applies to those two files alone.
NEUTRAL_EXEMPT = re.compile(r"^(?!src/server/(?:request|response)\.c$)")
SEAMS += [
    (re.compile(r"\bxops\b(?!\s*->\s*[a-z_]+\s*\()(?!\s*=(?!=))"), NEUTRAL_EXEMPT,
     "tests the request's protocol: request.c and response.c only call through its table "
     "(r->xops->fn(...)); what differs goes in the protocol's own ops (http1_ops.c, h2_stream.c)"),
    (re.compile(r"\b(?:req_http_major|req_protocol_label)\s*\("), NEUTRAL_EXEMPT,
     "asks which protocol the request is: request.c and response.c are the same for every one "
     "(put what differs in the protocol's exchange_ops)"),
    (re.compile(r"\bout\.(?:framing|keep_alive)\b|\bHTTP_OUT_[A-Z]+\b"), NEUTRAL_EXEMPT,
     "reads HTTP/1.1's framing state: that is http1_ops.c's (exchange_ops)"),
    (re.compile(r"\bconn_(?:read|write|writev|sendfile|try_read)\s*\("), NEUTRAL_EXEMPT,
     "does I/O on the connection: the protocol's ops do it (http1_ops.c, h2_stream.c)"),
]
INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)


def strip_comments(text):
    """Blanks C comments (keeping newlines, so line numbers hold), stepping
    over string and character literals ("*/*" is not a comment)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def layer_of(rel):
    """The layer of a path relative to the root, or None if in no layer."""
    parts = rel.split("/")
    if parts[0] == "include":
        return "api"
    if parts[0] == "python":
        return "python/" + parts[2] if len(parts) >= 4 else "python"
    if parts[0] != "src" or len(parts) < 3:
        return None
    if parts[1] == "server" and len(parts) >= 4:
        return "server/" + parts[2]
    return parts[1]


def rule_key(layer):
    return "server/*" if layer.startswith("server/") else layer


def allowed(frm, to):
    if frm == to:
        return True
    rule = RULES.get(rule_key(frm))
    if rule is None:
        return False
    if to.startswith("server/"):
        return "server/*" in rule
    return to in rule


def describe(layer):
    rule = RULES.get(rule_key(layer))
    if rule is None:
        return "%s is not a known layer: add it to scripts/check_layers.py" % layer
    if not rule:
        return "%s may include only itself (and system headers)" % layer
    names = ["server/<feature>" if r == "server/*" else r for r in rule]
    if layer.startswith("python"):
        names.append("the C boundary's headers")
    return "%s may include only %s (and itself)" % (layer, ", ".join(names))


def sources(root):
    for top in ("src", "python/_spindle", "include"):
        base = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith(SOURCE_EXT):
                    yield os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/")


def resolve(root, rel, name, layer):
    """(target path relative to root or None, problem text or None)."""
    here = os.path.dirname(rel)
    search = ["include", "src"]
    if layer.startswith("python"):
        search = ["python/_spindle"] + search  # the binding's own, "common/binding.h"
    for d in search:
        cand = os.path.normpath(os.path.join(d, name)).replace(os.sep, "/")
        if os.path.isfile(os.path.join(root, cand)):
            return cand, None
    if name in EXTERNAL.get(layer, ()):
        return None, None
    local = os.path.normpath(os.path.join(here, name)).replace(os.sep, "/")
    if os.path.isfile(os.path.join(root, local)):
        top = "python/_spindle/" if layer.startswith("python") else "src/"
        return None, ('includes "%s", which resolves only next to the including file: '
                      'write it folder-qualified from %s ("%s")' % (name, top, local[len(top):]))
    return None, 'includes "%s", which resolves to no file under include/ or src/' % name


def fence(edges):
    """Violations of the fence: every header the binding reaches (from its
    own files, through any chain of includes) must not include a header of
    src/server/ outside PYTHON_HEADERS."""
    out = []
    todo = [t for rel, es in edges.items() if rel.startswith("python/") for _, _, t in es]
    seen = set()
    while todo:
        h = todo.pop()
        if h in seen or not h.startswith("src/"):
            continue
        seen.add(h)
        for line, name, t in edges.get(h, ()):
            if t.startswith(FENCED_TOP) and t not in PYTHON_HEADERS:
                out.append('%s:%d: includes "%s" — the binding reaches %s, so it would see the '
                           "server's insides (struct sp_req, sp_res, conn): a header of the C boundary "
                           "includes only the boundary, spindle.h and the layers below the server "
                           "(embed.h's accessors instead)" % (h, line, name, h))
            else:
                todo.append(t)
    return out


def check(root):
    violations = []
    edges = {}  # file -> [(line, name, resolved target)]
    nfiles = nincludes = 0
    for rel in sources(root):
        nfiles += 1
        frm = layer_of(rel)
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = strip_comments(f.read())
        for pattern, allowed_in, why in SEAMS:
            if allowed_in.search(rel):
                continue
            for m in pattern.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                violations.append("%s:%d: %s — %s" % (rel, line, m.group(0).strip(), why))
        for m in INCLUDE_RE.finditer(text):
            nincludes += 1
            line = text.count("\n", 0, m.start()) + 1
            name = m.group(1)
            where = "%s:%d: " % (rel, line)
            if frm is None:
                violations.append(where + 'includes "%s" from a file in no layer: '
                                  'sources live in a folder of src/' % name)
                continue
            target, problem = resolve(root, rel, name, frm)
            if problem:
                violations.append(where + problem)
                continue
            if target is None:  # an allowed external header
                continue
            edges.setdefault(rel, []).append((line, name, target))
            if os.path.dirname(target) == os.path.dirname(rel):
                continue  # same folder: always fine
            to = "spindle.h" if target == "include/spindle.h" else layer_of(target)
            if to is None:
                to = target
            if to.startswith("python") and not frm.startswith("python"):
                violations.append(where + 'includes "%s" (layer %s) — nothing in src/ '
                                  'includes python/' % (name, to))
            elif frm.startswith("python") and target.startswith("src/"):
                if target not in PYTHON_HEADERS:
                    violations.append(where + 'includes "%s" — the binding reaches the C side '
                                      'through %s only (docs/ARCHITECTURE.md: the C boundary)' %
                                      (name, ", ".join(sorted(h[4:] for h in PYTHON_HEADERS))))
            elif not allowed(frm, to):
                violations.append(where + 'includes "%s" (layer %s) — %s' %
                                  (name, to, describe(frm)))
    violations += fence(edges)
    return violations, nfiles, nincludes


def main():
    ap = argparse.ArgumentParser(description="Checks the include rules between spindle's layers.")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
                    help="the tree to check (holding src/, include/, python/_spindle/)")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    if not os.path.isdir(os.path.join(root, "src")):
        print("check_layers: %s has no src/" % root, file=sys.stderr)
        return 2
    violations, nfiles, nincludes = check(root)
    for v in violations:
        print(v)
    if violations:
        print("check_layers: %d violation%s in %d includes of %d files" %
              (len(violations), "" if len(violations) == 1 else "s", nincludes, nfiles))
        return 1
    print("check_layers: %d includes in %d files, every one within the layer rules" %
          (nincludes, nfiles))
    return 0


if __name__ == "__main__":
    sys.exit(main())
