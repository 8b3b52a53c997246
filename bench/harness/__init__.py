"""The `make bench` harness (bench/run): starts servers and peers pinned to
CPUs, drives them with wrk/ab, and writes tables, CSV and charts to
bench/results/. One module per job: procs, peers, databases, load, workloads,
report, install."""
