// bench/peers/node_parked.js — node's side of bench/run's parked workload:
// the part of examples/chat's API that bench/parked_client.py uses, on node's
// http module and npm's `ws` package (the one tests/ws_node pins), so that
// memory per parked connection is measured beside spindle's on one machine.
//   GET /ws            a WebSocket: every announcement, as the chat sends it
//   GET /poll?since=N  {"seq":S,"messages":[...]} after N, parked until there
//                      is one (204 after --poll-ms)
//   GET /stats         {"ws":..,"parked":..,"seq":..,"fanout_max_us":..}
// and an {"seq","ts","type":"online","n"} announcement every --announce-ms.
//   node node_parked.js --port P --modules DIR [--announce-ms N] [--poll-ms N]
'use strict';
const http = require('http');
const path = require('path');

const args = {port: 0, modules: '', 'announce-ms': 1000, 'poll-ms': 25000};
for (let i = 2; i + 1 < process.argv.length; i += 2)
  args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
const {WebSocketServer} = require(path.resolve(args.modules, 'ws'));

const RING = 256;
const ring = [];
let lastSeq = 0;
let parked = [];  // [{res, since, timer}]
let fanoutMaxUs = 0;
const wss = new WebSocketServer({noServer: true, perMessageDeflate: false});

function post(fields) {
  const m = Object.assign({seq: ++lastSeq, ts: Date.now()}, fields);
  const json = JSON.stringify(m);
  ring.push({seq: m.seq, json});
  if (ring.length > RING) ring.shift();
  const t0 = process.hrtime.bigint();
  for (const ws of wss.clients) ws.send(json);
  const us = Number(process.hrtime.bigint() - t0) / 1000;
  if (us > fanoutMaxUs) fanoutMaxUs = us;
  const waiting = parked;
  parked = [];
  for (const p of waiting) {
    clearTimeout(p.timer);
    answer(p.res, p.since);
  }
}

function answer(res, since) {
  const msgs = ring.filter((m) => m.seq > since).map((m) => m.json);
  const body = '{"seq":' + lastSeq + ',"messages":[' + msgs.join(',') + ']}';
  res.writeHead(200, {'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body),
                      'Cache-Control': 'no-store'});
  res.end(body);
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/stats') {
    const body = JSON.stringify({ws: wss.clients.size, parked: parked.length, seq: lastSeq,
                                 fanout_max_us: Math.round(fanoutMaxUs)});
    res.writeHead(200, {'Content-Type': 'application/json', 'Content-Length': body.length});
    return res.end(body);
  }
  if (url.pathname !== '/poll') {
    res.writeHead(404, {'Content-Length': 0});
    return res.end();
  }
  const s = url.searchParams.get('since');
  const since = s === null ? lastSeq : Number(s);
  if (since < lastSeq) return answer(res, since);
  const p = {res, since};
  p.timer = setTimeout(() => {
    parked = parked.filter((q) => q !== p);
    res.writeHead(204, {'Cache-Control': 'no-store'});
    res.end();
  }, Number(args['poll-ms']));
  parked.push(p);
  req.on('close', () => {
    if (!res.writableEnded) {
      clearTimeout(p.timer);
      parked = parked.filter((q) => q !== p);
    }
  });
});
server.on('upgrade', (req, socket, head) => {
  if (!req.url.startsWith('/ws')) return socket.destroy();
  wss.handleUpgrade(req, socket, head, () => {});
});
server.maxConnections = Infinity;
server.keepAliveTimeout = 60000;
server.headersTimeout = 61000;
server.requestTimeout = 0;
setInterval(() => post({type: 'online', n: wss.clients.size + parked.length}),
            Number(args['announce-ms']));
server.listen(Number(args.port), '127.0.0.1');
