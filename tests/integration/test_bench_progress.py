"""bench/run's progress line (bench/harness/progress.py): the pure
formatting and estimate, the plan counted up front from the options, and
the two outputs — one line rewritten with \\r on a terminal, one plain line
per run in a log."""
import io
import os
import sys
import types

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from harness import progress  # noqa: E402


def test_line_formats_counts_elapsed_and_time_left():
    assert progress.line(12, 40, 190, 420) == "12/40 runs, 3m10s elapsed, ~7m left"
    assert progress.line(0, 40, 2, None) == "0/40 runs, 2s elapsed, ~? left"
    assert progress.line(39, 40, 3725, 59.6) == "39/40 runs, 1h02m elapsed, ~1m left"


def test_fmt_duration_rounds_and_picks_units():
    assert [progress.fmt_duration(s) for s in (0, 44.6, 60, 61, 3599, 3600, -3)] == \
        ["0s", "45s", "1m", "1m01s", "59m59s", "1h00m", "0s"]


def test_estimate_is_the_remaining_planned_cost_at_the_pace_so_far():
    assert progress.estimate_left(0, 100, 5) is None
    assert progress.estimate_left(25, 100, 50) == 150  # 2 s per unit, 75 units left
    assert progress.estimate_left(100, 100, 50) == 0


def opts(**kw):
    o = dict(servers=["spindle-c", "nginx", "node"], rounds=3, duration=5, connections=[100, 1000],
             workloads=["keepalive", "close", "static", "syscalls"], latency_duration=10, apps=["hello"],
             max_workers=2, scaling_servers=[], instruction_servers=[], syscall_servers=["spindle-c", "nginx"],
             smoke=False, parked_seconds=10, asgi_servers=[], h2_servers=[])
    o.update(kw)
    return types.SimpleNamespace(**o)


def test_plan_counts_every_run_from_the_options():
    p = {w: n for w, n, _ in progress.plan(opts(), 2)}
    # hello: 3 servers x (2 keep-alive + 2 close with ab + 2 close with wrk) x 3 rounds
    assert p == {"hello": 54, "static": 12, "syscalls": 4}


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_log_output_is_one_plain_line_per_run_and_skipped_runs_count_at_the_end():
    out, clock = io.StringIO(), Clock()
    pr = progress.Progress([("hello", 4, 5.0), ("static", 2, 5.0)], stream=out, tty=False, clock=clock)
    pr.begin("hello", 0)
    clock.t += 10
    pr.tick(1)
    pr.tick(1)  # no new row: nothing shown
    clock.t += 10
    pr.tick(2)
    pr.end(2)  # two planned runs never happened (a server did not come up)
    pr.begin("static", 2)
    clock.t += 10
    pr.tick(3)
    lines = out.getvalue().splitlines()
    assert lines == ["# progress: 1/6 runs, 10s elapsed, ~50s left",
                     "# progress: 2/6 runs, 20s elapsed, ~40s left",
                     "# progress: 4/6 runs, 20s elapsed, ~10s left",
                     "# progress: 5/6 runs, 30s elapsed, ~6s left"]
    assert "\r" not in out.getvalue()


def test_a_workload_that_records_more_than_planned_raises_the_total():
    out = io.StringIO()
    pr = progress.Progress([("h2", 1, 1.0)], stream=out, tty=False, clock=Clock())
    pr.begin("h2", 0)
    pr.tick(3)
    assert out.getvalue().splitlines()[-1].startswith("# progress: 3/3 runs")


def test_terminal_output_rewrites_one_line_and_log_lines_go_above_it():
    out = io.StringIO()
    pr = progress.Progress([("static", 2, 5.0)], stream=out, tty=True, clock=Clock())
    pr.begin("static", 0)
    pr.tick(1)
    pr.say("# a log line")
    pr.tick(2)
    pr.finish()
    v = out.getvalue()
    assert v.count("\n") == 2  # the log line and the final newline only
    assert v.startswith("\r\033[K1/2 runs")
    assert "\r\033[K# a log line\n1/2 runs" in v
    assert v.endswith("\r\033[K2/2 runs, 0s elapsed, ~0s left\n")
