"""docs/performance.md's benchmark tables are bench/latest's (bench/harness/
readme_tables.py, run by `bench/run --publish` and `bench/run --readme`):
the check that they match, that a figure edited by hand fails it, and that
a publish of some workloads keeps the other workloads' rows and tables,
each marked with the run it came from. Pure: no server, no load."""
import csv
import os
import re
import sys
import types

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))
from harness import publish, readme_tables  # noqa: E402

LATEST = os.path.join(ROOT, "bench", "latest")
README = os.path.join(ROOT, "docs", "performance.md")


def test_the_readme_tables_are_what_bench_latest_makes():
    text = open(README).read()
    names = set(readme_tables.blocks(text))
    assert {"runs", "hello", "wsgi", "nginx"} <= names
    bad = readme_tables.check(text, LATEST)
    assert not bad, "docs/performance.md's %s table(s) differ from bench/latest: run bench/run --readme (never edit a " \
                    "figure by hand)" % ", ".join(n for n, _, _ in bad)


def test_a_figure_edited_by_hand_fails_the_check():
    text = open(README).read()
    hello = readme_tables.blocks(text)["hello"]
    m = re.search(r"\| (\d)([\d,]*) \|", hello)  # the first figure of the table
    assert m, hello
    figure = "| %d%s |" % ((int(m.group(1)) % 9) + 1, m.group(2))
    edited = text.replace(hello, hello[:m.start()] + figure + hello[m.end():])
    assert [n for n, _, _ in readme_tables.check(edited, LATEST)] == ["hello"]
    assert readme_tables.check(readme_tables.rewrite(edited, readme_tables.tables(*readme_tables.load(LATEST))),
                               LATEST) == []


def test_a_block_with_nothing_in_bench_latest_is_left_as_it_is():
    text = "a\n<!-- bench:hello -->\nold\n<!-- /bench:hello -->\n<!-- bench:nginx -->\nold too\n<!-- /bench:nginx -->\n"
    out = readme_tables.rewrite(text, {"hello": "new\n", "nginx": None})
    assert out == "a\n<!-- bench:hello -->\nnew\n<!-- /bench:hello -->\n<!-- bench:nginx -->\nold too\n" \
                  "<!-- /bench:nginx -->\n"


def _csv(path, columns, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def _old_latest(dest):
    """An older full run in DEST: keep-alive, close and WSGI rows."""
    from harness import report
    dest.mkdir()
    runs, summary = [], []
    for wl, variant, rps in (("keepalive", "c=100", 70000), ("close", "c=1000", 9000), ("wsgi", "mako", 40000)):
        for server in ("spindle-c", "spindle", "nginx"):
            if wl == "wsgi" and server != "spindle":
                continue
            runs.append({"workload": wl, "variant": variant, "server": server, "round": 1, "requests_per_s": rps,
                         "server_cpu_us_per_request": 10})
            summary.append({"workload": wl, "variant": variant, "server": server, "runs": 1, "rps_median": rps,
                            "cpu_us_median": 10})
    _csv(dest / "runs.csv", report.COLUMNS, runs)
    _csv(dest / "summary.csv", report.SUMMARY, summary)
    _csv(dest / "provenance.csv", readme_tables.PROVENANCE,
         [{"workload": w, "date": "2026-11-30 01:21 UTC", "command": "bench/run --publish", "spindle": "git 9013628",
           "machine": "m", "took": "2010 s", "report": "bench.md"} for w in ("close", "keepalive", "wsgi")])
    (dest / "bench.md").write_text("the older run\n")
    (dest / "keepalive.png").write_bytes(b"png")


def test_a_publish_of_some_workloads_keeps_the_others_with_their_run(tmp_path):
    from harness import report
    dest, out = tmp_path / "latest", tmp_path / "out"
    _old_latest(dest)
    out.mkdir()
    # This run: static and syscalls only.
    runs = [{"workload": "static", "variant": "1MiB", "server": s, "round": 1, "requests_per_s": rps,
             "server_cpu_us_per_request": cpu} for s, rps, cpu in (("spindle-c", 2000, 100), ("nginx", 1000, 200))]
    runs += [{"workload": "syscalls", "variant": "keepalive", "server": s, "requests": 10000,
              "syscalls_per_request": n, "syscalls": calls}
             for s, n, calls in (("spindle-c", 2.01, "read=1.000 sendmsg=1.000 epoll_wait=0.010"),
                                 ("nginx", 2.3, "recvfrom=1.000 writev=1.000 epoll_wait=0.300"))]
    summary = [{"workload": "static", "variant": "1MiB", "server": s, "runs": 1, "rps_median": rps,
                "cpu_us_median": cpu} for s, rps, cpu in (("spindle-c", 2000, 100), ("nginx", 1000, 200))]
    _csv(out / "runs.csv", report.COLUMNS, runs)
    _csv(out / "summary.csv", report.SUMMARY, summary)
    for f in ("bench.md", "targets.csv"):
        (out / f).write_text("this run\n")
    readme = tmp_path / "README.md"
    readme.write_text("".join("<!-- bench:%s -->\nnot yet drawn\n<!-- /bench:%s -->\n" % (n, n)
                              for n in ("runs", "hello", "wsgi", "nginx")))
    publish.redraw(str(readme), str(dest))
    before = readme_tables.blocks(readme.read_text())
    # wsgi asked for but nothing measured (its servers did not come up).
    opts = types.SimpleNamespace(workloads=["static", "syscalls", "wsgi"], connections=[100, 1000], smoke=False)
    ctx = types.SimpleNamespace(opts=opts, rows=runs,
                                started="2026-12-01 16:00 UTC", command="bench/run --workloads static,syscalls",
                                spindle_version="git abc1234, build/spindle md5 0", machine="a machine; load average 1",
                                versions={"run took": "60 s"})
    publish.publish(str(dest), str(out), ctx, {}, str(readme))
    r, s, prov = readme_tables.load(str(dest))
    assert prov["static"]["date"] == "2026-12-01 16:00 UTC" and prov["syscalls"]["spindle"] == "git abc1234"
    assert prov["keepalive"]["date"] == "2026-11-30 01:21 UTC"
    assert [x["rps_median"] for x in s if x["workload"] == "static"] == ["2000", "1000"]
    assert any(x["workload"] == "keepalive" for x in r)  # the workloads not run stay
    assert (dest / "keepalive.png").exists() and (dest / "bench.md").read_text() == "this run\n"
    # The older run's report stays beside it while some of its rows do.
    assert (dest / "bench-202611300121.md").read_text() == "the older run\n"
    assert prov["keepalive"]["report"] == "bench-202611300121.md" and prov["static"]["report"] == "bench.md"
    b = readme_tables.blocks(readme.read_text())
    assert b["wsgi"] == before["wsgi"]  # nothing of it measured: the same table, its own run's date
    assert "| Mako template | 40,000 (10.0) |" in b["wsgi"] and "2026-11-30 01:21 UTC" in b["wsgi"]
    assert "| static 1 MiB file, keep-alive: requests/s | 2,000 | 1,000 | 2.00× |" in b["nginx"]
    assert "| keep-alive, 100 conns: requests/s | 70,000 | 70,000 | 1.00× |" in b["nginx"]
    assert "| syscalls per request, keep-alive (strace -c) | 2.01 (read 1.00, sendmsg 1.00) " \
           "| 2.30 (recvfrom 1.00, writev 1.00, epoll_wait 0.30) | 0.87× |" in b["nginx"]
    assert "the run of 2026-11-30 01:21 UTC" in b["nginx"] and "2026-12-01 16:00 UTC" in b["nginx"]
    assert "| syscalls per request, keep-alive (strace -c) | 2.01 | – | 2.30 |" in b["hello"]
    assert "2026-12-01 16:00 UTC: `bench/run --workloads static,syscalls`" in b["runs"]
    assert "[`bench/latest/bench-202611300121.md`](../bench/latest/bench-202611300121.md)" in b["runs"]
    assert readme_tables.check(readme.read_text(), str(dest)) == []
    # The targets are judged on the merged rows: the older run's keep-alive too.
    judged = {t["target"]: t for t in csv.DictReader(open(dest / "targets.csv"))}
    ka = judged["keepalive req/s ≥ 0.95× nginx"]
    assert (ka["value"], ka["verdict"]) == ("1.0", "met")
    # A later run of everything the older one gave: its report goes.
    ctx.opts.workloads = ["keepalive", "close", "wsgi"]
    ctx.rows = runs + [{"workload": w, "variant": "x", "server": "spindle-c"} for w in ctx.opts.workloads]
    ctx.started = "2026-12-01 17:00 UTC"
    publish.publish(str(dest), str(out), ctx, {}, str(readme))
    assert not (dest / "bench-202611300121.md").exists()
    assert {p["date"] for p in readme_tables.load(str(dest))[2].values()} == {"2026-12-01 17:00 UTC"}


def test_two_runs_of_one_minute_keep_both_reports(tmp_path):
    """Runs published within one minute: the first's kept report is not
    overwritten by the second's when a third run retires the second."""
    dest, out = tmp_path / "latest", tmp_path / "out"
    _old_latest(dest)  # keepalive, close, wsgi of 2026-11-30 01:21, in bench.md
    from harness import report
    out.mkdir()
    readme = tmp_path / "README.md"
    readme.write_text("")

    def run(workloads, started, text):
        rows = [{"workload": w, "variant": "x", "server": "spindle-c", "round": 1} for w in workloads]
        _csv(out / "runs.csv", report.COLUMNS, rows)
        _csv(out / "summary.csv", report.SUMMARY, [])
        (out / "bench.md").write_text(text)
        (out / "targets.csv").write_text("x\n")
        opts = types.SimpleNamespace(workloads=workloads, connections=[100], smoke=False)
        ctx = types.SimpleNamespace(opts=opts, rows=rows, started=started, command="bench/run " + text,
                                    spindle_version="git abc1234", machine="m", versions={})
        publish.publish(str(dest), str(out), ctx, {}, str(readme))

    run(["close"], "2026-11-30 01:21 UTC", "the close run\n")    # same minute as the older run
    run(["wsgi"], "2026-12-01 09:00 UTC", "the wsgi run\n")
    prov = readme_tables.load(str(dest))[2]
    assert (dest / prov["keepalive"]["report"]).read_text() == "the older run\n"
    assert (dest / prov["close"]["report"]).read_text() == "the close run\n"
    assert prov["keepalive"]["report"] != prov["close"]["report"]
    assert (dest / "bench.md").read_text() == "the wsgi run\n"


def test_the_wsgi_block_shows_the_asgi_table_with_ratios_to_granian_and_uvicorn():
    summary = [{"workload": "asgi", "variant": v, "server": s, "runs": 1, "rps_median": rps, "cpu_us_median": cpu}
               for v, s, rps, cpu in (("hello c=100", "spindle", 90000, 8), ("hello c=100", "granian", 60000, 16),
                                      ("hello c=100", "uvicorn", 45000, 20),
                                      ("ws echo, 100 clients", "spindle", 120000, 6),
                                      ("ws echo, 100 clients", "uvicorn", 60000, 15))]
    summary += [{"workload": "wsgi", "variant": "hello", "server": s, "runs": 1, "rps_median": rps,
                 "cpu_us_median": cpu} for s, rps, cpu in (("spindle", 80000, 10), ("granian", 40000, 20))]
    runs = [{"workload": "asgi", "variant": "1000 idle WebSockets", "server": s, "bytes_per_connection": b}
            for s, b in (("spindle", 1000), ("granian", 4000), ("uvicorn", 2000))]
    prov = {w: {"workload": w, "date": "2026-12-01 21:00 UTC", "command": "bench/run --workloads wsgi,asgi",
                "spindle": "git 1"} for w in ("wsgi", "asgi")}
    text = "\n".join(readme_tables.wsgi_table(runs, summary, prov))
    assert "| WSGI app (? conns, 1 worker): requests/s (server CPU µs/request) | spindle WSGI | granian " \
           "| spindle ÷ granian |" in text
    assert "| hello | 80,000 (10.0) | 40,000 (20.0) | 2.00× |" in text
    assert "| ASGI, 1 worker | spindle | granian | uvicorn (httptools, uvloop) | spindle ÷ granian " \
           "| spindle ÷ uvicorn |" in text
    assert "| raw ASGI hello, 100 conns: requests/s | 90,000 | 60,000 | 45,000 | 1.50× | 2.00× |" in text
    assert "| raw ASGI hello, 100 conns: server CPU µs/request | 8.0 | 16.0 | 20.0 | 0.50× | 0.40× |" in text
    assert "| WebSocket echo (100 clients): round trips/s | 120,000 | – | 60,000 | – | 2.00× |" in text
    assert "| memory per idle WebSocket (1,000 held, RSS) | 1.0 KB | 4.0 KB | 2.0 KB | 0.25× | 0.50× |" in text
