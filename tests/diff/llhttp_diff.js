// llhttp_diff.js — Node's own HTTP/1.1 parser (llhttp, strict: insecureHTTPParser
// false) on raw requests, for tests/suites/llhttp_diff.sh.
//
// Usage: node llhttp_diff.js CASES_DIR IDS_FILE
// Starts require('http').createServer on 127.0.0.1:<free port>; for each case id
// (one per line in IDS_FILE) connects, writes CASES_DIR/<id> raw, half-closes,
// and waits (1 s at most) for the server side to finish with that connection.
// A 400 answered without a clientError (node's Host check) is err HOST_400.
// Prints one JSON object per line: {id, reqs: [{m, u, b, up}], err}: the requests
// node's parser completed (method, url, body bytes delivered, up: an upgrade or
// CONNECT it handed over) and the parser error code (clientError), if any.
'use strict';
const fs = require('fs');
const http = require('http');
const net = require('net');
const path = require('path');

const [casesDir, idsFile] = process.argv.slice(2);
const ids = fs.readFileSync(idsFile, 'utf8').split('\n').filter(Boolean);

let current = null; // the record of the connection being tested (one at a time)

const server = http.createServer({insecureHTTPParser: false, requireHostHeader: true,
                                   keepAliveTimeout: 1000});
server.on('connection', (sock) => { sock.rec = current; });
server.on('request', (req, res) => {
  const rec = req.socket.rec;
  const r = {m: req.method, u: req.url, b: 0, done: false};
  if (rec) rec.reqs.push(r);
  req.on('data', (d) => { r.b += d.length; });
  req.on('end', () => {
    r.done = true;
    res.writeHead(200, {'Content-Length': '0'});
    res.end();
  });
  req.on('error', () => {});
});
function handOver(req, sock) {
  const rec = sock.rec;
  if (rec) rec.reqs.push({m: req.method, u: req.url, b: 0, done: true, up: true});
  sock.on('error', () => {});
  sock.end('HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
}
server.on('upgrade', handOver);
server.on('connect', handOver);
server.on('clientError', (err, sock) => {
  if (sock.rec && !sock.rec.err) sock.rec.err = err.code || String(err);
  if (sock.writable) sock.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
  else sock.destroy();
});

function runCase(id) {
  return new Promise((resolve) => {
    const rec = {id, reqs: [], err: null};
    current = rec;
    const data = fs.readFileSync(path.join(casesDir, id));
    const c = net.connect(server.address().port, '127.0.0.1');
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      c.destroy();
      // A 400 that no clientError explains: node's own Host check
      // (requireHostHeader) answers it without an event.
      if (!rec.err && /^HTTP\/1\.[01] 400 /m.test(answer)) rec.err = 'HOST_400';
      // Only completed requests count, as in spindle's verdict.
      rec.reqs = rec.reqs.filter((r) => r.done).map(({m, u, b, up}) => ({m, u, b, up: !!up}));
      resolve(rec);
    };
    const timer = setTimeout(finish, 1000);
    c.on('error', finish);
    c.on('close', finish);
    let answer = '';
    c.on('data', (d) => { answer += d.toString('latin1'); });
    c.on('connect', () => { c.end(data); });
  });
}

server.listen(0, '127.0.0.1', async () => {
  for (const id of ids) {
    const rec = await runCase(id);
    process.stdout.write(JSON.stringify(rec) + '\n');
  }
  server.close();
  process.exit(0);
});
