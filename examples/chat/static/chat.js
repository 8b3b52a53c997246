// chat.js — the chat room's client (examples/chat): messages over a
// WebSocket (/ws), falling back to long polling (/poll, POST /send) when a
// WebSocket cannot be opened; ?transport=ws|poll forces one. window.chat
// exposes the state for tests. Ids are the server's bus ids ("MS-SEQ"):
// whichever worker or instance the page reconnects to, ?since=lastId
// resumes where it left off.
'use strict';
const $ = id => document.getElementById(id);
const chat = window.chat = { mode: null, nick: null, lastId: null, online: null, ready: false };
const forced = new URLSearchParams(location.search).get('transport');
let ws = null;

function addLine(nick, text, cls) {
  const li = document.createElement('li');
  if (nick !== null) {
    const b = document.createElement('span');
    b.className = 'nick';
    b.textContent = nick;
    li.appendChild(b);
    li.dataset.nick = nick;
  }
  const t = document.createElement('span');
  t.className = cls || 'text';
  t.textContent = text;
  li.appendChild(t);
  const log = $('log');
  const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
  log.appendChild(li);
  if (atEnd) log.scrollTop = log.scrollHeight;
}

// "MS-SEQ" ids compared as two numbers.
function idAfter(a, b) {
  if (b === null) return true;
  const [am, as] = a.split('-').map(Number), [bm, bs] = b.split('-').map(Number);
  return am !== bm ? am > bm : as > bs;
}

function show(m) {
  if (typeof m.id !== 'string' || !idAfter(m.id, chat.lastId)) return; // seen
  if (m.type === 'error') return addLine(null, m.text, 'note');
  chat.lastId = m.id;
  if (m.type === 'msg') addLine(m.nick, m.text);
  else if (m.type === 'online') $('online').textContent = chat.online = m.n;
}

function status(text) { $('status').textContent = text; }

// ---- WebSocket ----------------------------------------------------------
function openWs() {
  let opened = false;
  const proto = location.protocol === 'https:' ? 'wss' : 'ws';
  ws = new WebSocket(`${proto}://${location.host}/ws?since=${chat.lastId}`);
  ws.onopen = () => { opened = true; chat.mode = 'ws'; chat.ready = true; status('live (WebSocket)'); };
  ws.onmessage = e => { try { show(JSON.parse(e.data)); } catch (err) { /* not ours */ } };
  ws.onclose = () => {
    ws = null;
    chat.ready = false;
    if (chat.mode === 'reconnect') return openWs(); // a new nickname
    if (!opened && forced !== 'ws') return startPolling(); // no WebSockets here
    status('reconnecting…');
    setTimeout(openWs, 300 + Math.random() * 700); // spread a whole instance's reconnects
  };
}

// ---- long polling ---------------------------------------------------------
async function startPolling() {
  chat.mode = 'poll';
  chat.ready = true;
  status('live (long polling)');
  for (;;) {
    try {
      const r = await fetch(`/poll?since=${chat.lastId}`, { cache: 'no-store' });
      if (r.status === 200) {
        const d = await r.json();
        d.messages.forEach(show);
      } else if (r.status !== 204) {
        throw new Error(`poll: ${r.status}`);
      }
      status('live (long polling)');
    } catch (err) {
      status('reconnecting…');
      await new Promise(ok => setTimeout(ok, 1000));
    }
  }
}

// ---- sending ----------------------------------------------------------------
async function send(text) {
  if (ws && ws.readyState === WebSocket.OPEN) return ws.send(text);
  const r = await fetch('/send', { method: 'POST', body: text, headers: { 'Content-Type': 'text/plain' } });
  if (!r.ok) addLine(null, `not sent (${r.status}): ${(await r.text()).trim()}`, 'note');
}

$('sendform').onsubmit = e => {
  e.preventDefault();
  const text = $('text').value.trim();
  if (text) send(text);
  $('text').value = '';
};

$('nickform').onsubmit = async e => {
  e.preventDefault();
  const r = await fetch('/nick', { method: 'POST', body: $('nick').value.trim() });
  if (!r.ok) return addLine(null, 'nicknames are 1 to 32 characters', 'note');
  chat.nick = (await r.json()).nick;
  $('nick').value = chat.nick;
  // The WebSocket took the nickname when it opened: open a new one.
  if (ws) { chat.mode = 'reconnect'; ws.close(); }
};

// ---- start --------------------------------------------------------------------
(async () => {
  const me = await (await fetch('/me', { cache: 'no-store' })).json();
  chat.nick = me.nick;
  $('nick').value = me.nick === 'anonymous' ? '' : me.nick;
  if (me.online !== undefined) $('online').textContent = chat.online = me.online;
  chat.lastId = me.history; // the last 50 messages
  if (forced === 'poll' || !('WebSocket' in window)) startPolling();
  else openWs();
})();
