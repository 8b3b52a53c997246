// ws_client.mjs — drives spindle's WebSocket test app (tests/apps/app_ws.c)
// with npm's `ws` client: node ws_client.mjs NODE_MODULES URL SCENARIO.
// Prints one JSON line {ok, detail} and exits 0 when the scenario passed.
import { createRequire } from 'node:module';
import path from 'node:path';

const [modules, url, scenario] = process.argv.slice(2);
const require = createRequire(path.join(modules, 'x.js'));
const WebSocket = require('ws');

function done(ok, detail) {
  console.log(JSON.stringify({ ok, scenario, detail }));
  process.exit(ok ? 0 : 1);
}
setTimeout(() => done(false, 'timed out'), 20000).unref();

function open() {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { maxPayload: 8 << 20 });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

// Resolves with the next message as {data: Buffer, binary}.
function next(ws) {
  return new Promise((resolve, reject) => {
    const onMsg = (data, binary) => { cleanup(); resolve({ data: Buffer.from(data), binary }); };
    const onClose = (code) => { cleanup(); reject(new Error('closed ' + code)); };
    const cleanup = () => { ws.off('message', onMsg); ws.off('close', onClose); };
    ws.on('message', onMsg);
    ws.on('close', onClose);
  });
}

function closed(ws) {
  return new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
}

const scenarios = {
  // Frames of many sizes, text and binary, echoed whole.
  async sizes() {
    const ws = await open();
    for (const n of [0, 1, 125, 126, 127, 65535, 65536, 100000, 1 << 20]) {
      const bin = Buffer.alloc(n);
      for (let i = 0; i < n; i++) bin[i] = (i * 13) & 0xff;
      ws.send(bin, { binary: true });
      let m = await next(ws);
      if (!m.binary || !m.data.equals(bin)) return done(false, `binary ${n}: got ${m.data.length}`);
      const text = 'é'.repeat(Math.floor(n / 2)) + (n % 2 ? 'a' : '');
      ws.send(text);
      m = await next(ws);
      if (m.binary || m.data.toString() !== text) return done(false, `text ${n}`);
    }
    ws.close(1000);
    const c = await closed(ws);
    done(c.code === 1000, c);
  },

  // A fragmented text message, a character split between fragments, and a
  // ping between fragments.
  async fragmented() {
    const ws = await open();
    const whole = Buffer.from('héllo wörld 😀 and more');
    const cuts = [0, 2, 3, 14, 16, whole.length];
    let pong = false;
    ws.on('pong', () => { pong = true; });
    for (let i = 0; i + 1 < cuts.length; i++) {
      if (i === 2) ws.ping('between');
      ws.send(whole.subarray(cuts[i], cuts[i + 1]), { binary: false, fin: i + 2 === cuts.length });
    }
    const m = await next(ws);
    if (m.binary || !m.data.equals(whole)) return done(false, 'got ' + m.data.toString());
    // Binary too, in 1000 fragments.
    const big = Buffer.alloc(100000, 7);
    for (let i = 0; i < 1000; i++)
      ws.send(big.subarray(i * 100, (i + 1) * 100), { binary: true, fin: i === 999 });
    const b = await next(ws);
    if (!b.binary || !b.data.equals(big)) return done(false, 'binary fragments');
    ws.close(1000);
    await closed(ws);
    done(pong, { pong });
  },

  // Our ping is answered with a pong carrying its data; the server's ping
  // reaches us (ws answers it).
  async pings() {
    const ws = await open();
    const got = new Promise((resolve) => ws.once('pong', (d) => resolve(d.toString())));
    ws.ping('abc');
    const p = await got;
    const sping = new Promise((resolve) => ws.once('ping', (d) => resolve(d.toString())));
    ws.send('ping');
    const s = await sping;
    ws.send('still there');
    const m = await next(ws);
    ws.close(1000);
    await closed(ws);
    done(p === 'abc' && s === 'hello' && m.data.toString() === 'still there', { p, s });
  },

  // The client closes: the server echoes the code.
  async close_by_client() {
    const ws = await open();
    ws.close(4001, 'client says bye');
    const c = await closed(ws);
    done(c.code === 4001, c);
  },

  // The server closes with 1000 "bye".
  async close_by_server() {
    const ws = await open();
    ws.send('close');
    const c = await closed(ws);
    done(c.code === 1000 && c.reason === 'bye', c);
  },

  // Another coroutine sends 500 messages while the handler echoes ours:
  // whole frames, each stream in order.
  async concurrent_senders() {
    const ws = await open();
    const spam = [], echo = [];
    let spamming = false;
    const all = new Promise((resolve) => {
      ws.on('message', (d) => {
        const s = d.toString();
        if (s === 'spamming') spamming = true;
        else if (s.startsWith('spam ')) spam.push(+s.slice(5));
        else echo.push(+s);
        if (spam.length === 500 && echo.length === 200) resolve();
      });
    });
    ws.send('spam 500');
    for (let i = 0; i < 200; i++) ws.send(String(i));
    await all;
    const inOrder = (a) => a.every((v, i) => v === i);
    ws.close(1000);
    await closed(ws);
    done(spamming && inOrder(spam) && inOrder(echo), { spam: spam.length, echo: echo.length });
  },

  // A message over the server's 1 MiB limit: 1009.
  async too_big() {
    const ws = await open();
    ws.send(Buffer.alloc((1 << 20) + 1), { binary: true });
    const c = await closed(ws);
    done(c.code === 1009, c);
  },

  // The same over fragments.
  async too_big_fragmented() {
    const ws = await open();
    const piece = Buffer.alloc(1 << 18);
    for (let i = 0; i < 5; i++) ws.send(piece, { binary: true, fin: i === 4 });
    const c = await closed(ws);
    done(c.code === 1009, c);
  },
};

const run = scenarios[scenario];
if (!run) done(false, 'no such scenario');
run().catch((e) => done(false, String(e)));
