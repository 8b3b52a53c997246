#!/bin/bash
# nginx_front.sh APP_SCRIPT PORTS NGINX_ARGV... — the articles' deployment of
# "nginx in front of several app processes": one single-process app server
# (APP_SCRIPT PORT 1) per port of the comma-separated PORTS, then nginx with
# NGINX_ARGV in the foreground. A TERM to this script stops all of them.
set -u
app=$1
ports=$2
shift 2
pids=()
for p in ${ports//,/ }; do
  "${PY:-build/venv/bin/python}" "$app" "$p" 1 &
  pids+=($!)
done
"$@" &
pids+=($!)
trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait' TERM INT
wait
