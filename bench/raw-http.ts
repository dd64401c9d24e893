// Raw HTTP/1.1 for the cache-hit benches (bench/cache-hits.ts, bench/hit-profile.ts): one GET
// read off the socket as bytes (status line, header lines in order, body), a comparison of two
// answers, and the node:http ceiling (bench/node-ceiling-server.js) started with answers
// captured from the gateway.
// Must never: connect beyond 127.0.0.1.
import { writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { type Child, chosenGatewayNode, startCpgw } from './cpgw-process.ts';

/** One answer as it came off the socket: status line, header lines in order, body. */
export interface RawAnswer {
  status: number;
  statusMessage: string;
  headers: Array<[string, string]>;
  body: Buffer;
}

/**
 * One GET over a fresh socket, written as wrk writes it (request line, Host, the given headers),
 * the answer read as raw bytes (Content-Length bodies only: a chunked answer throws).
 */
export function rawGet(url: string, path: string, headers: Record<string, string>): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  if (hostname !== '127.0.0.1') throw new Error(`loopback only: ${url}`);
  const request = [
    `GET ${path} HTTP/1.1`,
    `Host: ${hostname}:${port}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    '',
    '',
  ].join('\r\n');
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let data = Buffer.alloc(0);
    const timer = setTimeout(() => socket.destroy(new Error(`no full answer from ${url}${path}`)), 5000);
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const end = data.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [statusLine, ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
      const m = /^HTTP\/1\.1 (\d{3}) ?(.*)$/.exec(statusLine!);
      if (!m) return reject(new Error(`bad status line ${statusLine}`));
      const fields = lines.map((line): [string, string] => {
        const colon = line.indexOf(':');
        return [line.slice(0, colon), line.slice(colon + 1).trim()];
      });
      const length = fields.find(([k]) => k.toLowerCase() === 'content-length')?.[1];
      if (length === undefined) {
        clearTimeout(timer);
        socket.destroy();
        return reject(new Error(`${url}${path}: no Content-Length (chunked?): ${lines.join(' | ')}`));
      }
      if (data.length < end + 4 + Number(length)) return;
      clearTimeout(timer);
      socket.destroy();
      resolve({
        status: Number(m[1]),
        statusMessage: m[2]!,
        headers: fields,
        body: Buffer.from(data.subarray(end + 4, end + 4 + Number(length))),
      });
    });
    socket.write(request);
  });
}

/** Headers Node's http server writes itself after the application's (not captured for the ceiling). */
export const RUNTIME_HEADERS = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);

/**
 * Where two answers differ: status, header names/order, the value of a header not in `varying`,
 * body. Empty when they are the same bytes but for the values of the `varying` headers.
 */
export function differences(a: RawAnswer, b: RawAnswer, varying: ReadonlySet<string>): string[] {
  const out: string[] = [];
  if (a.status !== b.status || a.statusMessage !== b.statusMessage)
    out.push(`status ${a.status} ${a.statusMessage} / ${b.status} ${b.statusMessage}`);
  const names = (x: RawAnswer) => x.headers.map(([k]) => k).join(', ');
  if (names(a) !== names(b)) out.push(`header order: ${names(a)} / ${names(b)}`);
  for (const [i, [k, v]] of a.headers.entries()) {
    const other = b.headers[i];
    if (other && other[0] === k && other[1] !== v && !varying.has(k.toLowerCase()))
      out.push(`${k}: ${v} / ${other[1]}`);
  }
  if (!a.body.equals(b.body)) out.push(`body ${a.body.length} B / ${b.body.length} B, not equal`);
  return out;
}

/** The value of a header (name in lower case) in an answer. */
export function headerOf(a: RawAnswer, name: string): string | undefined {
  return a.headers.find(([k]) => k.toLowerCase() === name)?.[1];
}

/**
 * A HIT as the gateway at `url` writes it in the steady state: after warm-up reads (a coding the
 * gateway has not stored yet is answered in identity while it is made, and the first HITs after a
 * MISS put their headers in another order), read off the socket twice; what differs between the
 * two, and Date, is `varying` (a request id, an age). `alsoWarm`: other gateways warmed the same
 * way. Throws unless a 200 X-Cache HIT with Content-Encoding `encoding` (null: none) comes.
 */
export async function captureSteady(
  url: string,
  path: string,
  headers: Record<string, string>,
  encoding: string | null,
  alsoWarm: string[] = [],
): Promise<{ first: RawAnswer; varying: Set<string> }> {
  const names = (a: RawAnswer) => a.headers.map(([k]) => k).join(',');
  for (let attempt = 0; attempt < 20; attempt++) {
    for (const gw of [url, ...alsoWarm]) for (let i = 0; i < 5; i++) await rawGet(gw, path, headers);
    await new Promise((r) => setTimeout(r, 100));
    const first = await rawGet(url, path, headers);
    const second = await rawGet(url, path, headers);
    if (
      first.status === 200 &&
      headerOf(first, 'x-cache') === 'HIT' &&
      (headerOf(first, 'content-encoding') ?? null) === encoding &&
      names(first) === names(second)
    ) {
      const varying = new Set(['date']);
      for (const [k, v] of first.headers)
        if (headerOf(second, k.toLowerCase()) !== v) varying.add(k.toLowerCase());
      return { first, varying };
    }
  }
  throw new Error(`no steady HIT of ${path} with Content-Encoding ${encoding} from ${url}`);
}

/** What the ceiling serves for one request: its path, Accept-Encoding and the captured answer. */
export interface CeilingAnswer {
  path: string;
  acceptEncoding: string;
  answer: RawAnswer;
}

/**
 * Starts bench/node-ceiling-server.js (its own process) answering each (path, Accept-Encoding)
 * with the captured bytes; Node's own headers (Date, Connection, Keep-Alive) are left to it,
 * with the gateway's keep-alive timeout. `dir`: where its answers file is written.
 */
export async function startCeiling(
  dir: string,
  answers: CeilingAnswer[],
  launcher: string[] = [],
  env: Record<string, string> = {},
  startTimeoutMs = 20_000,
): Promise<{ child: Child; url: string }> {
  const keepAlive = answers.map((a) => headerOf(a.answer, 'keep-alive')).find((v) => v !== undefined) ?? '';
  const file = join(dir, 'ceiling-answers.json');
  await writeFile(
    file,
    JSON.stringify({
      keepAliveTimeoutMs: Number(/timeout=(\d+)/.exec(keepAlive)?.[1] ?? 5) * 1000,
      answers: answers.map(({ path, acceptEncoding, answer }) => ({
        path,
        acceptEncoding,
        status: answer.status,
        statusMessage: answer.statusMessage,
        headers: answer.headers.filter(([k]) => !RUNTIME_HEADERS.has(k.toLowerCase())),
        body: answer.body.toString('base64'),
      })),
    }),
  );
  // The runtime's ceiling runs on the gateways' Node (CPGW_BENCH_GATEWAY_NODE, else this one):
  // a ceiling on another release than the gateways it is compared with measures the releases.
  const started = await startCpgw(
    [file],
    env,
    /listening on (http:\/\/127\.0\.0\.1:\d+)/,
    'bench/node-ceiling-server.js',
    launcher,
    startTimeoutMs,
    chosenGatewayNode() ?? process.execPath,
  );
  return { child: started.child, url: started.match[1]! };
}
