// The runtime's ceiling for bench/cache-hits.ts: a bare `node:http` server, in its own process,
// answering each cell's request with the bytes the gateway sent for it (status, headers in the
// gateway's order, Content-Encoding included, and body), captured from the gateway once per run.
// Per request it does only what any node:http server must: look the answer up by URL and
// Accept-Encoding and write it. No auth, no routing framework, no logging. Node adds Date,
// Connection and Keep-Alive itself, as it does for the gateway (keepAliveTimeout is the gateway's,
// from its Keep-Alive header), so the bytes on the wire match the gateway's but for the Date.
// Plain JavaScript (run by node itself, not through tsx): the ceiling must carry no loader cost.
//   node bench/node-ceiling-server.js ANSWERS.json   (prints "listening on http://127.0.0.1:PORT")
// CEILING_SPIN_US=N (diagnostics only, bench/hit-profile.ts --ceiling-spin-us): each answer first
// spins N µs of CPU, to see what a few µs of JavaScript per request cost on this machine.
// ANSWERS.json: { keepAliveTimeoutMs, answers: [{ path, acceptEncoding, status, statusMessage, headers: [[name,
// value], ...], body (base64) }] }.
// Must never: listen beyond 127.0.0.1, or keep running after SIGTERM/SIGINT.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const file = process.argv[2];
if (!file) {
  console.error('usage: node bench/node-ceiling-server.js ANSWERS.json');
  process.exit(2);
}
const spec = JSON.parse(readFileSync(file, 'utf8'));
const answers = new Map();
for (const a of spec.answers) {
  answers.set(`${a.path}|${a.acceptEncoding}`, {
    status: a.status,
    statusMessage: a.statusMessage,
    headers: a.headers.flat(),
    body: Buffer.from(a.body, 'base64'),
  });
}
const notFound = Buffer.from('{"error":"not captured"}');
const spinMs = Number(process.env.CEILING_SPIN_US ?? 0) / 1000;

const server = createServer((req, res) => {
  if (spinMs > 0) {
    const until = performance.now() + spinMs;
    while (performance.now() < until);
  }
  const answer = answers.get(`${req.url}|${req.headers['accept-encoding'] ?? ''}`);
  if (answer === undefined) {
    res.writeHead(404, ['content-type', 'application/json', 'content-length', String(notFound.length)]);
    res.end(notFound);
    return;
  }
  res.writeHead(answer.status, answer.statusMessage, answer.headers);
  res.end(answer.body);
});
if (spec.keepAliveTimeoutMs) server.keepAliveTimeout = spec.keepAliveTimeoutMs;
server.listen(0, '127.0.0.1', () => {
  console.log(`node ceiling listening on http://127.0.0.1:${server.address().port}`);
});
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
