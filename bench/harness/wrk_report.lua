-- wrk_report.lua — loaded by bench/run into every wrk run. done() prints one
-- machine-readable line (requests, errors, latency percentiles in µs) that
-- the harness parses instead of wrk's rounded text. With BENCH_PACE_MS set,
-- each connection waits a random 0.5–1.5 × that many ms after each response
-- before its next request: a paced load at about connections × 1000 /
-- BENCH_PACE_MS requests/s (wrk 4 has no -R; see bench/README.md).
local pace = tonumber(os.getenv("BENCH_PACE_MS") or "")

if pace and pace > 0 then
  local lo = math.max(0, math.floor(pace / 2))
  local hi = math.max(lo, math.floor(pace * 3 / 2))
  function delay()
    return math.random(lo, hi)
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d connect=%d read=%d write=%d status=%d timeout=%d " ..
    "p50=%d p90=%d p99=%d p999=%d max=%d mean=%.1f\n",
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean))
end
