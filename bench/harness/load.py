"""Load generators and what they measure: wrk (keep-alive, and paced for
latency), ab (no keep-alive, as in the articles), an idle-connection holder
for memory per connection, and callgrind for instructions per request. Each
run reports the server's CPU time per request and the load generator's own
CPU use, so a run where the generator was the bottleneck can be flagged."""
import os
import re
import selectors
import signal
import socket
import subprocess
import tempfile
import time

from . import procs

HERE = os.path.dirname(os.path.abspath(__file__))
LUA = os.path.join(HERE, "wrk_report.lua")
# A generator using more than this share of its CPU was (nearly) the
# bottleneck: its figure is flagged in the tables.
SATURATED = 0.90


def run_measured(argv, server, timeout, env=None):
    """Run a load generator to completion, with the server's tree CPU time
    and the generator's own rusage (os.wait4) around it."""
    cpu0 = procs.tree_cpu_seconds(server.pid)
    stat0 = procs.cpu_times()
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         env=dict(os.environ, **(env or {})))
    deadline = t0 + timeout
    out = b""
    # Read while it runs (the pipe must not fill); bounded by TIMEOUT.
    os.set_blocking(p.stdout.fileno(), False)
    killed = False
    while True:
        try:
            chunk = p.stdout.read()
        except (BlockingIOError, TypeError):
            chunk = None
        if chunk:
            out += chunk
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline and not killed:
            p.send_signal(signal.SIGKILL)
            killed = True
        time.sleep(0.02)
    rest = p.stdout.read()
    if rest:
        out += rest
    p.stdout.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    cpu1 = procs.tree_cpu_seconds(server.pid)
    stat1 = procs.cpu_times()
    # How busy the server's CPUs were with anything but the server (other
    # processes, interrupts): high means the machine was not quiet.
    cpus = [c for c in getattr(server, "cpus", []) if c in stat0 and c in stat1]
    busy = sum(stat1[c][0] - stat0[c][0] for c in cpus)
    total = sum(stat1[c][1] - stat0[c][1] for c in cpus)
    other = max(0.0, 100.0 * (busy - (cpu1 - cpu0) * procs.CLK_TCK) / total) if total else ""
    return {
        "other_pct": other,
        "text": out.decode(errors="replace"),
        "status": p.returncode,
        "killed": killed,
        "wall_s": wall,
        "server_cpu_s": cpu1 - cpu0,
        "lg_cpu_s": ru.ru_utime + ru.ru_stime,
    }


def _finish(r, requests, errors, non2xx, extra):
    wall = r["wall_s"]
    row = {
        "requests": requests,
        "requests_per_s": requests / extra.pop("duration_s", wall) if requests else 0.0,
        "errors": errors,
        "non2xx": non2xx,
        "server_cpu_us_per_request": (r["server_cpu_s"] * 1e6 / requests) if requests else "",
        "loadgen_cpu_pct": round(100 * r["lg_cpu_s"] / wall, 1) if wall else "",
        "loadgen_saturated": int(wall > 0 and r["lg_cpu_s"] / wall >= SATURATED),
        "server_cpus_other_pct": round(r["other_pct"], 1) if r.get("other_pct", "") != "" else "",
    }
    row.update(extra)
    if r["killed"] or r["status"] not in (0,):
        row["note"] = ("load generator killed after its time limit" if r["killed"]
                       else "load generator exited %s: %s" % (r["status"], r["text"].strip()[-200:]))
    return row


def wrk(url, server, conns, duration, lg_cpus, pace_ms=None, close=False, headers=()):
    """wrk -t1 keep-alive; with PACE_MS, the paced latency run; with CLOSE,
    every request says `Connection: close` (a connection per request, but
    with wrk's lower cost per connection than ab's); HEADERS: more
    "Name: value" lines on every request."""
    argv = ["taskset", "-c", procs.cpu_list(lg_cpus), "wrk", "-t1", "-c%d" % conns, "-d%ds" % duration,
            "--timeout", "10s", "-s", LUA] + (["-H", "Connection: close"] if close else [])
    for h in headers:
        argv += ["-H", h]
    argv += [url]
    env = {"BENCH_PACE_MS": str(pace_ms)} if pace_ms else {}
    r = run_measured(argv, server, duration + 30, env)
    return _from_bench_line(r, "wrk")


def paced(binary, server, conns, rate, duration, lg_cpus):
    """The open-loop latency run (bench/pace.c): RATE requests/s over CONNS
    keep-alive connections, latency counted from each request's schedule."""
    argv = ["taskset", "-c", procs.cpu_list(lg_cpus), binary, str(server.port), str(conns), str(rate),
            str(duration)]
    r = run_measured(argv, server, duration + 30)
    return _from_bench_line(r, "pace")


def _from_bench_line(r, who):
    """A row from the BENCH line that wrk_report.lua and pace both print."""
    f = parse_wrk(r["text"])
    if f is None:
        return _finish(r, 0, 0, 0, {"note": "%s printed no result: %s" % (who, r["text"].strip()[-300:])})
    errors = f["connect"] + f["read"] + f["write"] + f["timeout"]
    extra = {"duration_s": f["duration_us"] / 1e6,
             "p50_ms": f["p50"] / 1000, "p90_ms": f["p90"] / 1000, "p99_ms": f["p99"] / 1000,
             "p999_ms": f["p999"] / 1000, "max_ms": f["max"] / 1000}
    return _finish(r, f["requests"], errors, f["status"], extra)


def parse_wrk(text):
    """The BENCH line wrk_report.lua prints, as {name: number}; None if absent."""
    m = re.search(r"^BENCH (.*)$", text, re.M)
    if not m:
        return None
    return {k: int(float(v)) for k, v in (kv.split("=") for kv in m.group(1).split())}


def ab(url, server, conns, duration, lg_cpus):
    """ab without keep-alive (HTTP/1.0, a connection per request), as in the
    articles, for DURATION seconds (-t; -n only caps it)."""
    argv = ["taskset", "-c", procs.cpu_list(lg_cpus), "ab", "-r", "-q", "-t", str(duration), "-n", "50000000",
            "-s", "10", "-c", str(conns), url]
    r = run_measured(argv, server, duration + 40)
    f = parse_ab(r["text"])
    if f is None:
        return _finish(r, 0, 0, 0, {"note": "ab printed no result: " + r["text"].strip()[-300:]})
    extra = {"duration_s": f["taken_s"] or r["wall_s"], "p50_ms": f["p50_ms"], "p99_ms": f["p99_ms"],
             "max_ms": f["max_ms"]}
    # ab counts a non-2xx answer as a success; only Failed requests are
    # errors (connect, receive, length, exceptions).
    return _finish(r, f["complete"] - f["failed"], f["failed"], f["non2xx"], extra)


def ab_count(url, server, conns, requests, lg_cpus, keepalive, env=None):
    """ab for a fixed number of REQUESTS (-n), keep-alive (-k) or a
    connection per request: the syscalls workload's load, so every server
    answers the same requests (ENV: ab's, the tls workload's OPENSSL_CONF)."""
    argv = ["taskset", "-c", procs.cpu_list(lg_cpus), "ab", "-r", "-q", "-n", str(requests), "-s", "10",
            "-c", str(conns)] + (["-k"] if keepalive else []) + [url]
    r = run_measured(argv, server, 300, env)
    f = parse_ab(r["text"])
    if f is None:
        return _finish(r, 0, 0, 0, {"note": "ab printed no result: " + r["text"].strip()[-300:]})
    return _finish(r, f["complete"] - f["failed"], f["failed"], f["non2xx"], {"duration_s": f["taken_s"] or r["wall_s"]})


def parse_ab(text):
    """ab's report as {complete, failed, non2xx, taken_s, p50_ms, p99_ms,
    max_ms}; None if it printed none."""
    def num(label, cast=int):
        m = re.search(r"^%s:\s+([0-9.]+)" % re.escape(label), text, re.M)
        return cast(m.group(1)) if m else None

    done = num("Complete requests")
    if done is None:
        return None
    pct = dict((int(p), float(v)) for p, v in re.findall(r"^\s+(\d+)%\s+(\d+)", text, re.M))
    return {"complete": done, "failed": num("Failed requests") or 0, "non2xx": num("Non-2xx responses") or 0,
            "taken_s": num("Time taken for tests", float), "p50_ms": pct.get(50, ""), "p99_ms": pct.get(99, ""),
            "max_ms": pct.get(100, "")}


def warm_up(server, lg_cpus, requests=500):
    subprocess.run(["taskset", "-c", procs.cpu_list(lg_cpus), "ab", "-k", "-r", "-q", "-s", "10", "-c", "10",
                    "-n", str(requests), "http://127.0.0.1:%d/" % server.port],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)


def _http_answered(data):
    """True once data holds a whole HTTP/1.1 response (Content-Length or chunked)."""
    head, sep, body = data.partition(b"\r\n\r\n")
    m = re.search(rb"(?i)content-length:\s*(\d+)", head)
    return bool(sep and (not m or len(body) >= int(m.group(1))) and (m or b"chunked" not in head.lower()
                                                                    or body.endswith(b"0\r\n\r\n")))


def hold_idle(port, count, settle=1.0, timeout=60, request=b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
              answered=_http_answered, on_answer=None):
    """Open COUNT connections, send REQUEST on each and read until ANSWERED(bytes)
    (by default a whole HTTP/1.1 GET / answer), then call ON_ANSWER(sock) if
    given, keep them open. Returns (socks, still_open_count, note)."""
    req = request
    sel = selectors.DefaultSelector()
    socks, pending, started = [], {}, 0
    deadline = time.monotonic() + timeout
    note = ""
    while (started < count or pending) and time.monotonic() < deadline:
        while started < count and len(pending) < 64:  # few in flight: idle cost, not burst cost
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            except OSError as e:
                note = "connect: %s" % e
                s.close()
                started = count
                break
            started += 1
            pending[s] = [b"", False]
            sel.register(s, selectors.EVENT_WRITE)
        for key, ev in sel.select(0.5):
            s = key.fileobj
            st = pending[s]
            try:
                if not st[1]:
                    s.send(req)
                    st[1] = True
                    sel.modify(s, selectors.EVENT_READ)
                    continue
                data = s.recv(65536)
            except OSError as e:
                note = "connection failed: %s" % e
                data = b""
            st[0] += data
            complete = bool(data) and answered(st[0])
            if complete and on_answer:
                try:
                    on_answer(s)
                except OSError:
                    pass
            if complete or not data:
                sel.unregister(s)
                del pending[s]
                socks.append(s)
    for s in list(pending):
        sel.unregister(s)
        s.close()
    time.sleep(settle)
    still = 0
    for s in socks:
        try:
            if s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                continue
            still += 1  # unexpected bytes: still open
        except BlockingIOError:
            still += 1
        except OSError:
            pass
    return socks, still, note


def memory_per_connection(server, count, settle=1.0, hold=None):
    """Bytes of server memory (RSS and PSS of its process tree) per idle
    keep-alive connection, after one request on each. HOLD(port, count)
    opens and holds them (default hold_idle: HTTP/1.1) and returns
    (sockets, how many are still open, a note)."""
    before = procs.tree_memory_kb(server.pid)
    socks, still, note = (hold or (lambda port, n: hold_idle(port, n, settle)))(server.port, count)
    after = procs.tree_memory_kb(server.pid)
    for s in socks:
        s.close()
    row = {"connections": count, "held_open": still, "rss_kb_before": before[0], "rss_kb_after": after[0],
           "pss_kb_before": before[1], "pss_kb_after": after[1]}
    if still:
        row["bytes_per_connection"] = round((after[0] - before[0]) * 1024 / still)
        row["pss_bytes_per_connection"] = round((after[1] - before[1]) * 1024 / still)
    if still < count:
        row["note"] = ("%d of %d connections were closed by the server after their answer%s"
                       % (count - still, count, "; " + note if note else ""))
    return row


def callgrind_total(files):
    total = 0
    for f in files:
        t = s = None
        with open(f, errors="replace") as fh:
            for line in fh:
                if line.startswith("totals:"):
                    t = int(line.split()[1])
                elif line.startswith("summary:"):
                    s = int(line.split()[1])
        total += t if t is not None else (s or 0)
    return total


def callgrind_functions(files):
    """{function: self Ir} summed over callgrind output FILES (every process
    of a server), from callgrind_annotate --inclusive=no: inlined code is
    folded into the function it is inlined in. {} without callgrind_annotate."""
    out = {}
    line_re = re.compile(r"^\s*([0-9,]+)\s+\(\s*[0-9.]+%\)\s+(\S.*)$")
    for f in files:
        try:
            r = subprocess.run(["callgrind_annotate", "--inclusive=no", "--auto=no", "--threshold=100", f],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            return {}
        on = False
        for line in r.stdout.decode(errors="replace").splitlines():
            if "file:function" in line:
                on = True
                continue
            m = line_re.match(line) if on else None
            if not m:
                continue
            name = re.sub(r" \[[^]]*\]$", "", m.group(2))
            fn = name.rsplit(":", 1)[-1]
            out[fn] = out.get(fn, 0) + int(m.group(1).replace(",", ""))
    return out


def instructions(make_server, n1, n2, lg_cpus, conc=10, keep=None, url="http://127.0.0.1:%d/", env=None):
    """User-space instructions per request: the server (every process of it,
    --trace-children) runs under callgrind twice, driven by `ab -k -c CONC`
    with N1 then N2 requests; (Ir(N2) - Ir(N1)) / (N2 - N1) cancels start-up,
    connection set-up and shutdown. The same difference per function gives
    the hot path ("functions": [(Ir/request, share %, function)], largest
    first). KEEP: a path prefix; the N2 run's largest profile is copied to
    KEEP.callgrind.out (for callgrind_annotate or kcachegrind). URL (with
    %d for the port) and ENV (ab's) for the tls workload's https runs."""
    totals, funcs = [], []
    for n in (n1, n2):
        d = tempfile.mkdtemp(prefix="spindle-bench-cg.")
        server = make_server(["valgrind", "--tool=callgrind", "--trace-children=yes", "--dump-instr=no",
                              "--callgrind-out-file=" + os.path.join(d, "cg.%p")], d)
        try:
            server.wait_listening(180)
            time.sleep(1)
            r = subprocess.run(["taskset", "-c", procs.cpu_list(lg_cpus), "ab", "-k", "-r", "-s", "60",
                                "-c", str(conc), "-n", str(n), url % server.port],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900,
                               env=dict(os.environ, **(env or {})))
            text = r.stdout.decode(errors="replace")
            m = re.search(r"^Complete requests:\s+(\d+)", text, re.M)
            f = re.search(r"^Failed requests:\s+(\d+)", text, re.M)
            if not m or int(m.group(1)) != n or (f and int(f.group(1))):
                raise RuntimeError("ab under callgrind did not complete %d requests:\n%s" % (n, text[-600:]))
        finally:
            server.stop(timeout=120)
        files = [os.path.join(d, x) for x in os.listdir(d) if x.startswith("cg.")]
        totals.append(callgrind_total(files))
        funcs.append(callgrind_functions(files))
        if keep and n == n2 and files:
            import shutil
            shutil.copy2(max(files, key=os.path.getsize), keep + ".callgrind.out")
        subprocess.run(["rm", "-rf", d])
    per = round((totals[1] - totals[0]) / (n2 - n1), 1)
    hot = []
    for fn, ir in funcs[1].items():
        d = (ir - funcs[0].get(fn, 0)) / (n2 - n1)
        if d > 0.5:
            hot.append((round(d, 1), round(100 * d / per, 1) if per else 0.0, fn))
    hot.sort(reverse=True)
    return {"requests": n2 - n1, "ir_n1": totals[0], "ir_n2": totals[1], "instructions_per_request": per,
            "functions": hot}


def parse_strace_c(text):
    """strace -c's summary table as {syscall: calls}."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 5 or parts[-1] == "total" or not re.match(r"^[0-9.]+$", parts[0]):
            continue
        try:
            out[parts[-1]] = out.get(parts[-1], 0) + int(parts[3])
        except ValueError:
            continue
    return out


def syscalls(server, run_load, path):
    """Syscalls per request: strace -c -f attached to every process of the
    server's tree while RUN_LOAD() drives it (strace slows the server by an
    order of magnitude: only the counts mean anything, not its speed)."""
    argv = ["strace", "-c", "-f", "-o", path]
    for p in procs.tree(server.pid):
        argv += ["-p", str(p)]
    st = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(0.5)  # attached
    try:
        res = run_load()
    finally:
        st.send_signal(signal.SIGINT)
        try:
            st.wait(30)
        except subprocess.TimeoutExpired:
            st.kill()
            st.wait()
    try:
        with open(path) as f:
            counts = parse_strace_c(f.read())
    except OSError:
        counts = {}
    n = res.get("requests") or 0
    per = {k: v / n for k, v in counts.items()} if n else {}
    res["server_cpu_us_per_request"] = ""  # under strace: meaningless
    res["syscalls_per_request"] = round(sum(per.values()), 3) if per else ""
    res["syscalls"] = " ".join("%s=%.3f" % (k, v) for k, v in sorted(per.items(), key=lambda kv: -kv[1])
                               if v >= 0.005)
    if not counts:
        res["note"] = (res.get("note", "") + " strace counted nothing: " + st.stderr.read().decode(
            errors="replace").strip()[-200:]).strip()
    st.stderr.close()
    return res
