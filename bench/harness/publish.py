"""bench/run --publish: the run into bench/latest, then the README's tables
redrawn from it. A run of some workloads replaces those workloads' rows
and keeps the others' (with the run they came from in provenance.csv), so
bench/latest stays the one source of every figure the README shows."""
import csv
import os
import re
import shutil
import types

from . import readme_tables, report, targets

def from_bench_md(path, workloads):
    """Provenance of an older bench/latest without provenance.csv: its
    bench.md's header names the run."""
    info = {"date": "", "command": "", "spindle": "", "machine": "", "took": "", "report": "bench.md"}
    if os.path.exists(path):
        text = open(path).read()
        for key, pat in (("date", r"^# spindle benchmarks — (.+)$"), ("command", r"^Command: `(.+)`$"),
                         ("machine", r"^Machine: (.+?)[.;] load average"), ("spindle", r"spindle (git \w+)"),
                         ("took", r"run took ([\d.]+ s)")):
            m = re.search(pat, text, re.M)
            if m:
                info[key] = m.group(1)
    return {w: dict(info, workload=w) for w in workloads}


def write_csv(path, columns, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def judge_merged(runs, summary, opts):
    """The targets judged on bench/latest's merged rows (CSV strings, which
    the judge reads as numbers)."""
    return targets.judge(types.SimpleNamespace(rows=runs, opts=opts), summary)


def publish(dest, out, ctx, charts, readme):
    """Copies the run in OUT into DEST (bench/latest), merging the rows of
    workloads this run did not measure, then redraws README."""
    # The workloads this run measured: one asked for that gave no row (its
    # servers did not come up) keeps its older rows.
    ran = {r["workload"] for r in ctx.rows}
    old_runs, old_summary, old_prov = readme_tables.load(dest)
    if old_runs and not old_prov:
        old_prov = from_bench_md(os.path.join(dest, "bench.md"), {r["workload"] for r in old_runs})
    kept = lambda rows: [r for r in rows if r["workload"] not in ran]  # noqa: E731
    runs = kept(old_runs) + readme_tables.read_csv(os.path.join(out, "runs.csv"))
    summary = kept(old_summary) + readme_tables.read_csv(os.path.join(out, "summary.csv"))
    took = ctx.versions.get("run took", "")
    this = {"date": ctx.started, "command": ctx.command, "spindle": ctx.spindle_version.split(",")[0],
            "machine": ctx.machine.split("; load average")[0], "took": took, "report": "bench.md"}
    prov = {w: p for w, p in old_prov.items() if w not in ran}
    os.makedirs(dest, exist_ok=True)
    # The older run's bench.md stays, renamed, while some of its rows do.
    older = os.path.join(dest, "bench.md")
    keep_as = ""
    if os.path.exists(older) and any(p.get("report", "bench.md") in ("", "bench.md") for p in prov.values()):
        date = next(p["date"] for p in prov.values() if p.get("report", "bench.md") in ("", "bench.md"))
        # Two runs published in one minute: the second name gets "-2" (the
        # first run's report, which some row may still point to, stays).
        stem, n = "bench-%s" % re.sub(r"[^0-9]", "", date)[:12], 1
        keep_as = stem + ".md"
        while os.path.exists(os.path.join(dest, keep_as)):
            n += 1
            keep_as = "%s-%d.md" % (stem, n)
        os.replace(older, os.path.join(dest, keep_as))
    for p in prov.values():
        if p.get("report", "bench.md") in ("", "bench.md"):
            p["report"] = keep_as
    for w in {r["workload"] for r in runs}:
        if w in ran:
            prov[w] = dict(this, workload=w)
    # Files this run rewrites go, and older reports no row points to;
    # charts of workloads it did not run stay.
    mine = ["bench.md", "targets.csv"] + [os.path.basename(c) for cs in charts.values() for c in cs]
    reports = {p.get("report") for p in prov.values()}
    for f in os.listdir(dest):
        if f in mine or f in ("runs.csv", "summary.csv", "provenance.csv") or \
                (re.match(r"bench-\d+(-\d+)?\.md$", f) and f not in reports):
            os.unlink(os.path.join(dest, f))
    for f in mine:
        shutil.copy2(os.path.join(out, f), dest)
    # Every target judged on the merged rows, not only this run's: a run of
    # two workloads leaves the others' verdicts standing (their rows came
    # from the runs provenance.csv names).
    report.write_targets(os.path.join(dest, "targets.csv"), judge_merged(runs, summary, ctx.opts))
    write_csv(os.path.join(dest, "runs.csv"), report.COLUMNS, runs)
    write_csv(os.path.join(dest, "summary.csv"), report.SUMMARY, summary)
    write_csv(os.path.join(dest, "provenance.csv"), readme_tables.PROVENANCE,
              [prov[w] for w in sorted(prov)])
    redraw(readme, dest)


def redraw(readme, latest):
    """Rewrites README's <!-- bench:NAME --> blocks from LATEST; returns the
    names of the blocks it changed."""
    text = open(readme).read()
    new = readme_tables.rewrite(text, readme_tables.tables(*readme_tables.load(latest)))
    if new != text:
        with open(readme, "w") as f:
            f.write(new)
    return [n for n, _, _ in readme_tables.check(text, latest)]
