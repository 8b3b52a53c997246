// node_hello.js PORT [WORKERS] — Node.js's own `http` module serving the
// hello world on 127.0.0.1:PORT; with WORKERS > 1 the `cluster` module forks
// that many workers sharing the port (round-robin from the primary, node's
// default on Linux). Keep-alive idle timeout 120 s, as the other servers.
'use strict';
const cluster = require('cluster');
const http = require('http');

const port = Number(process.argv[2]);
const workers = Number(process.argv[3] || 1);

function serve() {
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end('Hello world!');
  });
  server.keepAliveTimeout = 120000;
  server.headersTimeout = 121000;
  server.listen(port, '127.0.0.1', 1024);
  process.on('SIGTERM', () => process.exit(0));
}

if (workers > 1 && cluster.isPrimary) {
  for (let i = 0; i < workers; i++) cluster.fork();
  process.on('SIGTERM', () => {
    for (const id in cluster.workers) cluster.workers[id].kill('SIGTERM');
    process.exit(0);
  });
} else {
  serve();
}
