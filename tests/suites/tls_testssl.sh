#!/bin/bash
# tls_testssl.sh — Debian's testssl.sh against spindle's default TLS
# configuration (build/spindle --bind https://… with an RSA-2048 certificate,
# the key type that lets a weak default show: RSA key transport, CBC): only the
# checks that matter (protocols, cipher categories, forward secrecy, server
# preference, vulnerabilities; about 25 s). Fails on any finding of severity
# MEDIUM or worse (its --jsonfile), on a scan that did not run, and on any of
# the issue's promises not kept: TLS 1.2 and 1.3 only, forward-secret AEAD
# suites only, server cipher order, no compression, no client-initiated
# renegotiation, ALPN http/1.1. Skipped, saying so, without testssl.sh.
. "$(dirname "$0")/lib/preamble.sh"

TESTSSL=$(command -v testssl || command -v testssl.sh)
if [ -z "$TESTSSL" ]; then
  skip 1 "testssl.sh is not installed (Debian: testssl.sh, in scripts/deps.sh): spindle's TLS defaults were not scanned"
  finish
fi
[ -x build/spindle ] || abort "build/spindle missing (make)"

if ! openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 2 \
  -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 >"$work/req.log" 2>&1; then
  cat "$work/req.log"
  abort "openssl req could not make the test certificate"
fi
port=$(free_port)
build/spindle --bind "https://127.0.0.1:$port" --certfile "$work/cert.pem" --keyfile "$work/key.pem" \
  --log-level warning >"$work/server.log" 2>&1 &
pid=$!
up=
for _ in $(seq 100); do
  if curl -sk --max-time 2 "https://127.0.0.1:$port/" >/dev/null 2>&1; then
    up=1
    break
  fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$up" ]; then
  cat "$work/server.log"
  abort "spindle did not answer https://127.0.0.1:$port/ within 10 s"
fi
ok "spindle serves https on 127.0.0.1:$port with its default TLS configuration"

start=$SECONDS
# Bounded: the scan takes about 25 s here; 120 s means it hung.
timeout 120 "$TESTSSL" --quiet --fast --ip 127.0.0.1 --warnings off --color 0 --connect-timeout 5 \
  --openssl-timeout 5 -p -s -f -P -U --jsonfile "$work/testssl.json" "127.0.0.1:$port" >"$work/testssl.out" 2>&1
rc=$?
echo "testssl.sh exited $rc after $((SECONDS - start)) s"
if [ ! -s "$work/testssl.json" ]; then
  tail -30 "$work/testssl.out"
  abort "testssl.sh wrote no JSON findings"
fi

# The findings, one check each.
counted "$PY" - "$work/testssl.json" <<'PYEOF'
import json, sys
findings = json.load(open(sys.argv[1]))
by = {f["id"]: f for f in findings}
passed = failed = 0


def check(ok, msg):
    global passed, failed
    print(("ok   " if ok else "FAIL ") + msg)
    passed, failed = passed + bool(ok), failed + (not ok)


worse = [f for f in findings if f["severity"] in ("MEDIUM", "HIGH", "CRITICAL", "FATAL")]
for f in worse:
    print("  %s %s: %s" % (f["severity"], f["id"], f["finding"]))
check(not worse, "no finding of severity MEDIUM or worse (%d findings)" % len(findings))


def finding(i):
    return by.get(i, {}).get("finding", "(not tested)")


for i in ("TLS1_2", "TLS1_3"):
    check(finding(i).startswith("offered"), "%s offered: %s" % (i, finding(i)))
for i in ("SSLv2", "SSLv3", "TLS1", "TLS1_1"):
    check(finding(i).startswith("not offered"), "%s refused: %s" % (i, finding(i)))
# Forward-secret AEAD suites only: no NULL, anonymous, export, DES/RC4,
# 3DES/IDEA or CBC ("AVERAGE") category offered, and every suite has (EC)DHE.
for i in ("cipherlist_NULL", "cipherlist_aNULL", "cipherlist_EXPORT", "cipherlist_LOW", "cipherlist_3DES_IDEA",
          "cipherlist_AVERAGE"):
    check(finding(i) == "not offered", "%s: %s" % (i, finding(i)))
check(finding("cipherlist_STRONG") == "offered", "AEAD suites offered")
check(by.get("PFS", {}).get("severity") == "OK", "forward secrecy: %s" % finding("PFS"))
check(by.get("cipher_order", {}).get("severity") == "OK", "server cipher order: %s" % finding("cipher_order"))
check(finding("CRIME_TLS").startswith("not vulnerable"), "no TLS compression (CRIME): %s" % finding("CRIME_TLS"))
check(finding("secure_client_renego").startswith("not vulnerable"),
      "no client-initiated renegotiation: %s" % finding("secure_client_renego"))
check("http/1.1" in finding("ALPN"), "ALPN http/1.1: %s" % finding("ALPN"))
for i in ("heartbleed", "CCS", "ticketbleed", "ROBOT", "POODLE_SSL", "SWEET32", "FREAK", "DROWN", "LOGJAM",
          "BEAST", "LUCKY13"):
    check(i in by and by[i]["severity"] in ("OK", "INFO"), "%s: %s" % (i, finding(i)))
print("%d passed, %d failed" % (passed, failed))
PYEOF

# testssl's categories file AEAD suites with RSA key transport as STRONG:
# offer openssl s_client only the suites the defaults must refuse.
refused() { # DESCRIPTION, s_client options...
  local what=$1
  shift
  if echo | timeout 10 openssl s_client -connect "127.0.0.1:$port" "$@" >"$work/sc.out" 2>&1 ||
    grep -q '^New, TLS' "$work/sc.out"; then
    bad "$what accepted: $(grep -m1 '^New, ' "$work/sc.out")"
  else
    ok "$what refused"
  fi
}
refused "TLS 1.2 without forward secrecy (no ECDHE/DHE)" -tls1_2 -cipher 'ALL:!kECDHE:!kDHE:@SECLEVEL=0'
refused "TLS 1.2 without AEAD (CBC, RC4, NULL)" -tls1_2 -cipher 'ALL:eNULL:!AESGCM:!CHACHA20:!AESCCM:@SECLEVEL=0'
refused "TLS 1.1" -tls1_1 -cipher 'ALL:@SECLEVEL=0'

if kill -0 "$pid" 2>/dev/null && curl -sk --max-time 5 "https://127.0.0.1:$port/" | grep -q .; then
  ok "spindle still serves after the scan"
else
  bad "spindle stopped serving during the scan"
  tail -20 "$work/server.log"
fi
kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=
finish
