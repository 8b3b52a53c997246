"""The pure parts of the benchmark harness (bench/harness/): parsing wrk's
and ab's reports, the medians and min–max of the summary, the socket-table
readiness check and the process-tree CPU reading. The whole harness runs in
tests/suites/bench_run_smoke.sh."""
import os
import socket
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from harness import load, procs, publish, report, targets, tlsbench  # noqa: E402

AB_REPORT = """This is ApacheBench, Version 2.3 <$Revision: 1903618 $>

Server Software:
Server Hostname:        127.0.0.1
Server Port:            8080

Document Path:          /
Document Length:        12 bytes

Concurrency Level:      100
Time taken for tests:   2.000 seconds
Complete requests:      23456
Failed requests:        7
   (Connect: 0, Receive: 7, Length: 0, Exceptions: 0)
Non-2xx responses:      3
Total transferred:      2345600 bytes
HTML transferred:       281472 bytes
Requests per second:    11728.00 [#/sec] (mean)

Percentage of the requests served within a certain time (ms)
  50%      4
  66%      5
  90%      6
  99%     11
 100%     25 (longest request)
"""


def test_parse_ab_reads_counts_time_and_percentiles():
    f = load.parse_ab(AB_REPORT)
    assert f == {"complete": 23456, "failed": 7, "non2xx": 3, "taken_s": 2.0, "p50_ms": 4.0, "p99_ms": 11.0,
                 "max_ms": 25.0}


def test_parse_ab_without_a_report_is_none():
    assert load.parse_ab("apr_socket_connect(): Connection refused (111)\n") is None


def test_parse_ab_defaults_missing_failure_lines_to_zero():
    text = AB_REPORT.replace("Failed requests:        7\n", "Failed requests:        0\n")
    text = text.replace("Non-2xx responses:      3\n", "")
    f = load.parse_ab(text)
    assert (f["failed"], f["non2xx"]) == (0, 0)


def test_parse_wrk_reads_the_lua_line_among_wrks_text():
    text = ("Running 2s test @ http://127.0.0.1:1/\n  1 threads and 100 connections\n"
            "BENCH requests=140000 duration_us=2001234 connect=0 read=2 write=0 status=5 timeout=1 "
            "p50=650 p90=900 p99=1800 p999=4000 max=9000 mean=700.5\nRequests/sec: 69957.00\n")
    f = load.parse_wrk(text)
    assert f["requests"] == 140000 and f["duration_us"] == 2001234
    assert (f["read"], f["status"], f["timeout"]) == (2, 5, 1)
    assert (f["p50"], f["p99"], f["p999"], f["max"]) == (650, 1800, 4000, 9000)


def test_parse_wrk_without_the_line_is_none():
    assert load.parse_wrk("unable to connect to 127.0.0.1:1 Connection refused\n") is None


def row(server, rps, cpu, rnd, **kw):
    r = {"workload": "keepalive", "variant": "c=100", "server": server, "round": rnd, "requests_per_s": rps,
         "server_cpu_us_per_request": cpu, "errors": 0, "non2xx": 0, "loadgen_cpu_pct": 50.0,
         "loadgen_saturated": 0}
    r.update(kw)
    return r


def test_summary_has_median_and_min_max_per_server():
    rows = [row("a", 100.0, 10.0, 1), row("a", 300.0, 30.0, 2), row("a", 200.0, 20.0, 3),
            row("b", 50.0, 5.0, 1, errors=4, loadgen_saturated=1, note="x")]
    s = {x["server"]: x for x in report.summarize(rows)}
    assert (s["a"]["runs"], s["a"]["rps_median"], s["a"]["rps_min"], s["a"]["rps_max"]) == (3, 200.0, 100.0, 300.0)
    assert s["a"]["cpu_us_median"] == 20.0
    assert (s["b"]["errors"], s["b"]["saturated_runs"], s["b"]["notes"]) == (4, 1, "x")


def test_throughput_table_marks_saturated_runs_and_ratios_to_spindle_c():
    rows = [row("spindle-c", 100.0, 10.0, 1), row("nginx", 50.0, 20.0, 1, loadgen_saturated=1)]
    lines = report.throughput_table(report.summarize(rows), "keepalive")
    nginx = next(x for x in lines if "| nginx |" in x)
    assert "0.50×" in nginx and "2.00×" in nginx and "⚠ saturated in 1 of 1 runs" in nginx


STRACE_C = """% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 52.10    0.412345          10     40123           read
 45.00    0.356789           8     40001         3 sendmsg
  2.90    0.022999         100       230           epoll_wait
------ ----------- ----------- --------- --------- ----------------
100.00    0.792133                 80354         3 total
"""


def test_parse_strace_c_reads_calls_with_and_without_errors_and_skips_the_total():
    assert load.parse_strace_c(STRACE_C) == {"read": 40123, "sendmsg": 40001, "epoll_wait": 230}


class FakeCtx:
    def __init__(self, rows, smoke=False):
        self.rows = rows
        self.opts = type("Opts", (), {"connections": [100], "smoke": smoke})()


def test_targets_judge_medians_and_paired_ratios_and_say_what_did_not_run():
    rows = [row("spindle-c", 100.0, 9.0, 1), row("nginx", 100.0, 10.0, 1),
            row("spindle-c", 90.0, 9.0, 2), row("nginx", 100.0, 10.0, 2),
            row("spindle-c", 80.0, 12.0, 3), row("nginx", 100.0, 10.0, 3)]
    ctx = FakeCtx(rows)
    t = {r["target"]: r for r in targets.judge(ctx, report.summarize(rows))}
    rps = t["keepalive req/s ≥ 0.95× nginx"]
    assert (rps["value"], rps["paired"], rps["verdict"]) == (0.9, 0.9, "NOT met")
    cpu = t["keepalive CPU/req ≤ 1.0× nginx"]
    assert (cpu["value"], cpu["verdict"]) == (0.9, "met")
    assert t["close req/s ≥ 0.95× nginx"]["verdict"] == "not run"
    assert t["WSGI keepalive req/s ≥ 4× uwsgi"]["verdict"] == "not run"
    smoke = {r["target"]: r for r in targets.judge(FakeCtx(rows, smoke=True), report.summarize(rows))}
    assert smoke["keepalive req/s ≥ 0.95× nginx"]["verdict"] == "not judged"
    lines = targets.table([rps, cpu])
    assert "| 6 | keepalive req/s ≥ 0.95× nginx | 0.9× | 0.9× | **NOT met** |" in lines


def test_memory_target_is_judged_only_at_10000_connections():
    mem = {"workload": "memory", "variant": "1000 idle", "server": "spindle-c", "connections": 1000,
           "held_open": 1000, "rss_kb_after": 20480}
    t = {r["target"]: r for r in targets.judge(FakeCtx([mem]), [])}
    r = t["10,000 idle keep-alive connections in ≤ 40 MB (RSS, whole tree)"]
    assert (r["value"], r["verdict"]) == (20.0, "not judged (1000 connections, not 10,000)")
    mem.update(connections=10000, held_open=10000, variant="10000 idle")
    t = {r["target"]: r for r in targets.judge(FakeCtx([mem]), [])}
    assert t["10,000 idle keep-alive connections in ≤ 40 MB (RSS, whole tree)"]["verdict"] == "met"
    # Not met in RSS: the verdict also gives the tree's PSS (shared pages counted once).
    mem.update(pss_kb_after=3900)
    t = {r["target"]: r for r in targets.judge(FakeCtx([mem]), [])}
    assert t["10,000 idle keep-alive connections in ≤ 6 MB (RSS, whole tree)"]["verdict"] == \
        "NOT met (PSS of the tree 3.8 MB)"


def test_published_targets_are_judged_on_the_merged_rows_read_back_as_strings():
    # bench/latest's rows come back from CSV as strings: the keep-alive run of
    # one publish and the memory run of another are both judged.
    raw = [row("spindle-c", 100.0, 8.0, 1), row("nginx", 100.0, 10.0, 1)]
    as_csv = lambda rs: [{k: str(v) for k, v in r.items()} for r in rs]  # noqa: E731
    rows, summary = as_csv(raw), as_csv(report.summarize(raw))
    mem = {"workload": "memory", "variant": "10000 idle", "server": "spindle-c", "connections": "10000",
           "held_open": "10000", "rss_kb_after": "5120", "round": "1"}
    opts = type("Opts", (), {"connections": [100], "smoke": False})()
    t = {r["target"]: r for r in publish.judge_merged(rows + [mem], summary, opts)}
    cpu = t["keepalive CPU/req ≤ 1.0× nginx"]
    assert (cpu["value"], cpu["paired"], cpu["verdict"]) == (0.8, 0.8, "met")
    assert t["10,000 idle keep-alive connections in ≤ 6 MB (RSS, whole tree)"]["verdict"] == "met"


def test_listening_sees_a_listener_and_not_a_closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    assert not procs.listening(port)
    s.listen()
    try:
        assert procs.listening(port)
    finally:
        s.close()


def test_tree_cpu_counts_a_busy_child():
    pid = os.fork()
    if pid == 0:
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            pass
        os._exit(0)
    try:
        time.sleep(0.45)
        assert procs.tree_cpu_seconds(os.getpid()) >= 0.2
        assert pid in procs.tree(os.getpid())
    finally:
        os.waitpid(pid, 0)


S_TIME_REUSE = """Collecting connection statistics for 1 seconds
*rrrrrrrrrr
rrr*r

16 connections in 0.01s; 1600.00 connections/user sec, bytes read 2480
16 connections in 2 real seconds, 155 bytes read per connection
"""


def test_parse_s_time_counts_connections_and_resumed_marks():
    assert tlsbench.parse_s_time(S_TIME_REUSE) == {"connections": 16, "user_s": 0.01, "reused": 14, "full": 2}
    assert tlsbench.parse_s_time("connect: Connection refused\nconnect:errno=111\n") is None


def test_parse_s_client_reads_protocol_suite_and_group():
    text = ("Peer signature type: ECDSA\nServer Temp Key: X25519, 253 bits\n---\n"
            "New, TLSv1.3, Cipher is TLS_AES_128_GCM_SHA256\nServer public key is 256 bit\n")
    assert tlsbench.parse_s_client(text) == "TLSv1.3 TLS_AES_128_GCM_SHA256 X25519"
    assert tlsbench.parse_s_client("connect:errno=111") is None


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))


def test_asgi_targets_compare_spindle_with_uvicorn_per_variant():
    def asgi(server, variant, rps, cpu):
        return row(server, rps, cpu, 1, workload="asgi", variant=variant)
    rows = [asgi("spindle", "hello c=100", 75000.0, 8.0), asgi("uvicorn", "hello c=100", 26000.0, 38.0),
            asgi("spindle", "fastapi c=100", 10000.0, 90.0), asgi("uvicorn", "fastapi c=100", 6000.0, 150.0),
            asgi("spindle", "ws echo, 100 clients", 40000.0, 10.0),
            asgi("uvicorn", "ws echo, 100 clients", 18000.0, 35.0)]
    ctx = FakeCtx(rows)
    ctx.opts.asgi_ws_clients = 100
    t = {r["target"]: r for r in targets.judge(ctx, report.summarize(rows)) if r["issue"] == 17}
    assert (t["ASGI hello req/s ≥ 2.5× uvicorn"]["value"], t["ASGI hello req/s ≥ 2.5× uvicorn"]["verdict"]) == \
        (2.885, "met")
    assert (t["ASGI hello CPU/req ≤ 0.4× uvicorn"]["value"], t["ASGI hello CPU/req ≤ 0.4× uvicorn"]["verdict"]) == \
        (0.211, "met")
    assert t["FastAPI JSON req/s ≥ 1.8× uvicorn"]["verdict"] == "NOT met"   # 1.667×
    assert t["WebSocket echo round trips/s ≥ 2× uvicorn"]["value"] == 2.222
    ctx.rows = [r for r in rows if r["variant"] != "fastapi c=100"]
    t = {r["target"]: r for r in targets.judge(ctx, report.summarize(ctx.rows)) if r["issue"] == 17}
    assert t["FastAPI JSON req/s ≥ 1.8× uvicorn"]["verdict"] == "not run"


def test_ws_echo_prints_the_line_wrk_report_lua_prints():
    line = ("BENCH requests=40372 duration_us=1000132 connect=0 read=1 write=0 timeout=0 status=2 p50=1490 "
            "p90=3000 p99=9680 p999=12000 max=15000 open=100\n")
    f = load.parse_wrk(line)
    assert (f["requests"], f["read"], f["status"], f["p99"], f["open"]) == (40372, 1, 2, 9680, 100)
