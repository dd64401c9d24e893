// A real `cpgw start` whose stdout nobody reads for a while (a log collector that is behind or
// stopped): the gateway keeps answering at once, its stdout is non-blocking, and once the
// reader comes back every request line arrives whole and in order. A reader that is gone (its
// end of the pipe closed) costs the lines, counted in cpgw_log_lines_dropped_total on the
// metrics listener, and never an answer. (Before, sonic-boom slept 100 ms with the event loop
// stopped on each full pipe and tried again: a reader that stopped stopped the gateway.)
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { envWithoutCpgw, waitForOutput } from '../helpers/child-process.ts';
import { freePort } from '../helpers/redis.ts';

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A demo gateway at log level info, its banner read; stdout still a pipe to this process. */
async function demoGateway(metricsPort: number) {
  const dir = mkdtempSync(join(tmpdir(), 'cpgw-log-reader-'));
  dirs.push(dir);
  const child = spawn('node', ['bin/cpgw.js', 'start'], {
    env: envWithoutCpgw({
      CPGW_STATE_DIR: dir,
      CPGW_PORT: '0',
      CPGW_METRICS_PORT: String(metricsPort),
      CPGW_LOG_LEVEL: 'info',
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const out = await waitForOutput(child, /Server listening at/);
  const token = /Demo app token \(shown once\): (\S+)/.exec(out)![1]!;
  const url = /Gateway: (http:\/\/\S+)/.exec(out)![1]!;
  return { child, token, url };
}

/** `count` reads of one company (the first stores it, the rest are HITs), `parallel` at a time. */
async function reads(url: string, token: string, count: number, parallel: number): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) {
        next++;
        const res = await fetch(`${url}/v1/companies/7707083893`, {
          headers: { authorization: `Bearer ${token}` },
          signal: AbortSignal.timeout(10_000),
        });
        await res.arrayBuffer();
        statuses.push(res.status);
      }
    }),
  );
  return statuses;
}

async function stop(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  return exited;
}

describe('the request log with a slow or absent stdout reader', () => {
  it('keeps answering while stdout is not read, and every line arrives whole and in order once it is', async () => {
    const { child, token, url } = await demoGateway(await freePort());
    // stdout was made non-blocking (O_NONBLOCK, 04000 octal in fdinfo's flags).
    const flags = /flags:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/fdinfo/1`, 'utf8'))![1]!;
    expect(Number.parseInt(flags, 8) & 0o4000).toBe(0o4000);

    // Nobody reads stdout now: ~4,000 request lines (~1.3 MB) are far more than the pipe holds.
    let text = '';
    child.stdout!.removeAllListeners('data');
    child.stdout!.pause();
    const statuses = await reads(url, token, 4_000, 16);
    expect(statuses.filter((s) => s === 200)).toHaveLength(4_000);

    // The reader is back: all lines arrive.
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    child.stdout!.resume();
    const requestLines = () => text.split('\n').filter((l) => l.includes('"msg":"request"'));
    for (let i = 0; i < 200 && requestLines().length < 4_000; i++)
      await new Promise((r) => setTimeout(r, 50));
    const lines = requestLines().map((l) => JSON.parse(l) as { status: number; route: string; time: string });
    expect(lines).toHaveLength(4_000);
    expect(lines.every((l) => l.status === 200 && l.route === 'company')).toBe(true);
    const times = lines.map((l) => Date.parse(l.time));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(text).not.toContain('log lines dropped');
    expect(await stop(child)).toBe(0);
  });

  it('a reader that is gone costs the lines, counted in cpgw_log_lines_dropped_total, never an answer', async () => {
    const metricsPort = await freePort();
    const { child, token, url } = await demoGateway(metricsPort);
    const scrape = async () => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return Number(/^cpgw_log_lines_dropped_total (\d+)$/m.exec(text)?.[1]);
    };
    expect(await scrape()).toBe(0);
    child.stdout!.destroy(); // this end of the pipe closed: the gateway's writes get EPIPE
    const statuses = await reads(url, token, 500, 8);
    expect(statuses.filter((s) => s === 200)).toHaveLength(500);
    // Lines wait in a batch up to 16 KB, written at the latest every 200 ms.
    let dropped = 0;
    for (let i = 0; i < 50 && dropped < 500; i++) {
      await new Promise((r) => setTimeout(r, 100));
      dropped = await scrape();
    }
    expect(dropped).toBeGreaterThanOrEqual(500);
    expect(await stop(child)).toBe(0);
  });
});
