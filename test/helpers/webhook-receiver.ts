// An app's webhook receiver on port 0 and small waits for the checks/webhook tests.
import { createServer, type Server } from 'node:http';
import type { Harness } from './gateway-harness.ts';

interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  at: number;
}

/** An app's webhook receiver on port 0: records every delivery; answers the status given per path. */
export async function startReceiver(statuses: Record<string, number[]> = {}) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks), at: Date.now() });
      const status = statuses[path]?.shift() ?? 200;
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return { url, received, close: () => new Promise<void>((r) => server.close(() => r())) };
}

export async function until<T>(what: () => Promise<T | undefined> | T | undefined, ms = 5_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await what();
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 25));
  }
}

export const checkPolls = async (h: Harness) =>
  ((await h.emu('/requests')) as { requests: Array<{ path: string; method: string }> }).requests.filter(
    (r) => r.method === 'GET' && r.path.startsWith('/v1/checks/'),
  ).length;
