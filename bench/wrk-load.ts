// wrk as the load generator of bench/cache-hits.ts (a C client: the node client in the bench
// process saturates before nginx does). One wrk thread, N connections, a bounded duration, one URL
// on loopback; returns req/s, p50/p99 (from --latency) and the count of non-2xx answers.
// Returns null when wrk is not installed (the bench then uses its node client).
// Must never: run without a duration bound, or target anything but 127.0.0.1.
import { spawn, spawnSync } from 'node:child_process';

export function wrkAvailable(): boolean {
  return spawnSync('wrk', ['--version'], { encoding: 'utf8' }).error === undefined;
}

export interface WrkRun {
  requests: number;
  req_per_s: number;
  p50_ms: number;
  p99_ms: number;
  non2xx: number;
  socket_errors: number;
  body_bytes_per_s: number;
}

/** wrk's latency text ("812.00us", "1.20ms", "2.00s") in ms. */
function ms(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim());
  if (!m) return Number.NaN;
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 'ms' ? v : m[2] === 's' ? v * 1000 : v * 60_000;
}

function bytes(text: string): number {
  const m = /^([\d.]+)(B|KB|MB|GB)$/.exec(text.trim());
  if (!m) return Number.NaN;
  return Number(m[1]) * { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 }[m[2] as 'B'];
}

export function parseWrk(out: string): WrkRun {
  const num = (re: RegExp) => Number(re.exec(out)?.[1] ?? Number.NaN);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    requests: num(/(\d+) requests in/),
    req_per_s: Math.round(num(/Requests\/sec:\s+([\d.]+)/)),
    p50_ms: ms(/^\s+50%\s+(\S+)/m.exec(out)?.[1] ?? ''),
    p99_ms: ms(/^\s+99%\s+(\S+)/m.exec(out)?.[1] ?? ''),
    non2xx: num(/Non-2xx or 3xx responses: (\d+)/) || 0,
    socket_errors: sock ? sock.slice(1).reduce((s, x) => s + Number(x), 0) : 0,
    body_bytes_per_s: bytes(/Transfer\/sec:\s+(\S+)/.exec(out)?.[1] ?? ''),
  };
}

export function runWrk(
  url: string,
  headers: Record<string, string>,
  connections: number,
  seconds: number,
): Promise<WrkRun> {
  if (!/^http:\/\/127\.0\.0\.1:/.test(url)) throw new Error(`wrk only on loopback: ${url}`);
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '--timeout', '5s'];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}: ${value}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    const proc = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    proc.stderr.on('data', (c: Buffer) => {
      out += c.toString();
    });
    proc.once('error', reject);
    proc.once('exit', (code) =>
      code === 0 ? resolve(parseWrk(out)) : reject(new Error(`wrk exited ${code}: ${out}`)),
    );
  });
}
