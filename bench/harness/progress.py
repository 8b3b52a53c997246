"""bench/run's progress: how many runs are done of the total planned up
front, the time elapsed and an estimate of the time left. On a terminal one
line rewritten with \\r; in a log (not a TTY) one plain line per run.
The formatting and the estimate are pure functions (tested alone)."""
import sys
import time


def fmt_duration(seconds):
    """45 -> '45s', 190 -> '3m10s', 3720 -> '1h02m' (whole seconds)."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return "%ds" % s
    if s < 3600:
        return "%dm%02ds" % (s // 60, s % 60) if s % 60 else "%dm" % (s // 60)
    return "%dh%02dm" % (s // 3600, (s % 3600) // 60)


def estimate_left(done_cost, total_cost, elapsed):
    """Seconds left: the planned cost still to run at the pace measured so
    far (elapsed per unit of planned cost done); None before any run."""
    if total_cost > 0 and done_cost >= total_cost:
        return 0.0
    if done_cost <= 0 or elapsed <= 0:
        return None
    return max(0.0, (total_cost - done_cost) * elapsed / done_cost)


def line(done, total, elapsed, left):
    """'12/40 runs, 3m10s elapsed, ~7m left' ('~?' before the first run)."""
    est = "~?" if left is None else "~" + fmt_duration(left)
    return "%d/%d runs, %s elapsed, %s left" % (done, total, fmt_duration(elapsed), est)


def plan(o, n_cpus):
    """The planned runs, from the options alone: [(workload, runs, seconds
    per run)] in the order bench/run runs them. A count is what the workload
    records when every server comes up; the seconds weigh the estimate."""
    s, r, d = len(o.servers), o.rounds, o.duration
    wl = set(o.workloads)
    out = []
    hello = 0
    for w, per in (("keepalive", 1), ("close", 2)):  # close: ab and wrk with Connection: close
        if w in wl:
            hello += s * len(o.connections) * r * per
    cost = hello * (d + 1)
    if "latency" in wl:
        hello += s * r
        cost += s * r * (o.latency_duration + 1)
    if "memory" in wl:
        hello += s
        cost += s * 10
    if hello:
        out.append(("hello", hello, cost / hello))
    if "wsgi" in wl:
        from .peers import BY_NAME
        wsgi = [x for x in o.servers if x in BY_NAME and BY_NAME[x].kind == "wsgi"]
        apps = [a for a in o.apps if a != "hello" or "keepalive" not in wl]
        out.append(("wsgi", len(wsgi) * len(apps) * r, d + 2))
    if "static" in wl:
        out.append(("static", 2 * len([x for x in o.servers if x in ("spindle-c", "nginx")]) * r, d + 1))
    if "page" in wl:  # a load is well under a second; the browser's start and the first loads
        out.append(("page", 2 * o.page_loads, 1))
    if "scaling" in wl:
        out.append(("scaling", min(n_cpus, o.max_workers) * len(o.scaling_servers) * r, d + 2))
    if "instructions" in wl:
        out.append(("instructions", len(o.instruction_servers), 30))
    if "syscalls" in wl:
        out.append(("syscalls", 2 * len(o.syscall_servers), 20))  # under strace: slow
    if "sessions" in wl:
        # hello, 3 stores (a new and a returning visitor each), ab: for the C demo and its WSGI twin
        out.append(("sessions", 8 * r * len([x for x in o.servers if x in ("spindle-c", "spindle")]), d + 1))
    if "parked" in wl and "spindle-c" in o.servers:
        out.append(("parked", 2 if o.smoke else 9, o.parked_seconds + 15))  # 3 phases × guard pages on, off, uvicorn
    if "tls" in wl:
        # spindle-c and nginx: five timed variants, idle connections; one callgrind run
        out.append(("tls", len([x for x in o.servers if x in ("spindle-c", "nginx")]) * (5 * r + 1) + 1, d + 2))
    if "asgi" in wl:
        parts = getattr(o, "asgi_parts", ["throughput", "memory", "instructions"])
        n = len(o.asgi_servers) * ((3 * r if "throughput" in parts else 0) + ("memory" in parts))
        n += len(getattr(o, "asgi_instruction_servers", [])) if "instructions" in parts else 0
        out.append(("asgi", n, d + 2))  # hello, FastAPI, WebSocket echo; idle WebSockets; callgrind
    if "h2" in wl:
        out.append(("h2", len(o.h2_servers) * (2 * r + 1), d + 2))  # h2c, h2 over TLS, idle
    return [p for p in out if p[1] > 0]


class Progress:
    """Counts the runs as ctx.rows grows. A workload that records fewer runs
    than planned (a server that did not come up, a skipped part) is counted
    as done when it ends; one that records more raises the total."""

    def __init__(self, planned, stream=None, tty=None, clock=time.monotonic):
        self.planned = {w: (n, sec) for w, n, sec in planned}
        self.total = sum(n for _, n, _ in planned)
        self.total_cost = sum(n * sec for _, n, sec in planned)
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self.clock = clock
        self.t0 = clock()
        self.done = 0
        self.done_cost = 0.0
        self.current, self.rows0, self.counted = None, 0, 0
        self.shown = False

    def begin(self, workload, rows):
        self.current, self.rows0, self.counted = workload, rows, 0

    def tick(self, rows):
        """ROWS: len(ctx.rows) now. Shows the line when a run was added."""
        if self.current is None:
            return
        n, sec = self.planned.get(self.current, (0, 1.0))
        new = rows - self.rows0 - self.counted
        if new <= 0:
            return
        for _ in range(new):
            self.counted += 1
            if self.counted > n:
                self.total += 1
                self.total_cost += sec
            self.done += 1
            self.done_cost += sec
        self.show()

    def end(self, rows):
        """The workload is over: its runs not recorded count as done."""
        self.tick(rows)
        n, sec = self.planned.get(self.current, (0, 1.0))
        if self.counted < n:
            self.done += n - self.counted
            self.done_cost += (n - self.counted) * sec
            self.show()
        self.current = None

    def text(self):
        elapsed = self.clock() - self.t0
        return line(self.done, self.total, elapsed, estimate_left(self.done_cost, self.total_cost, elapsed))

    def show(self):
        t = self.text()
        if self.tty:
            self.stream.write("\r\033[K" + t)  # rewritten in place
            self.shown = True
        else:
            self.stream.write("# progress: " + t + "\n")
        self.stream.flush()

    def say(self, text):
        """Prints a log line above the progress line (a terminal) or as is."""
        if self.tty and self.shown:
            self.stream.write("\r\033[K")
        print(text, file=self.stream, flush=True)
        if self.tty and self.shown:
            self.stream.write(self.text())
            self.stream.flush()

    def finish(self):
        if self.tty and self.shown:
            self.stream.write("\n")
            self.stream.flush()
            self.shown = False


ACTIVE = None  # the run's Progress, for log lines (workloads.log)


def say(text):
    if ACTIVE is not None:
        ACTIVE.say(text)
    else:
        print(text, flush=True)
