// Steady traffic through gateway replicas while the store fails over (issue 31 item 2), shared by
// test/integration/redis-cluster-failover and bench/redis-cluster-failover: `paid` clients each
// read companies nobody asked for before (every read a charge), `cached` clients re-read warmed
// companies (hits), one request at a time each, until stop(). Every request gives up after
// `deadlineMs` (the client's deadline); an answer that is not 200, a timeout or a broken
// connection is a client error. After the load: the gateway's ledger beside the emulator's (the
// truth), once nothing is pending any more.
import { performance } from 'node:perf_hooks';
import type { OffsetClock } from '../../src/clock.ts';
import { createStore } from '../../src/store/create-store.ts';
import type { Store } from '../../src/store/store.ts';
import { type GatewayInstance, type Harness, startHarness } from './gateway-harness.ts';
import { uniquePrefix } from './redis.ts';
import type { TestCluster } from './redis-cluster.ts';

export interface FailoverGateways {
  h: Harness;
  second: GatewayInstance;
  /** The key prefix both replicas use on the cluster. */
  prefix: string;
  /** Closes both gateways and their stores (not the cluster). */
  close(): Promise<void>;
}

/**
 * Two gateway replicas on `cluster` (the production default: hits from an in-process tier in
 * front of it), apps `paying` and `reading`, the upstream's and the gateway's key limit raised to
 * `keyLimit` so the rate is the clients' own, a fast reconciler, and `store` settings as given.
 */
export async function startFailoverGateways(
  cluster: TestCluster,
  o: { keyLimit: number; walletMinor: number; upstreamTimeoutMs: number; store?: Record<string, unknown> },
): Promise<FailoverGateways> {
  const prefix = uniquePrefix('failover');
  const stores: Store[] = [];
  const clusterStore = (clock: OffsetClock) => {
    const store = createStore({
      redisClusterNodes: cluster.nodes,
      prefix,
      clock,
      cacheMaxBytes: 64 * 1024 * 1024,
      localCacheBytes: 64 * 1024 * 1024,
      onError: () => {},
    });
    stores.push(store);
    return store;
  };
  const h = await startHarness({
    apps: [{ name: 'paying' }, { name: 'reading' }],
    emulator: {
      limits: { keyPerMinute: o.keyLimit },
      walletMinor: o.walletMinor,
      latency: { company: '10-40' },
    },
    config: {
      limits: { key: { limit: o.keyLimit, burst: o.keyLimit } },
      upstream: { timeoutMs: o.upstreamTimeoutMs },
      ...(o.store ? { store: o.store } : {}),
      cost: { reconcileIntervalMs: 200 },
    },
    store: clusterStore,
  });
  const second = await h.addGateway(clusterStore(h.gateway.clock));
  return {
    h,
    second,
    prefix,
    close: async () => {
      await h.close();
      for (const store of stores) await store.close().catch(() => {});
    },
  };
}

export interface Sample {
  kind: 'paid' | 'cached';
  inn: string;
  /** performance.now() at send and at the end of the body. */
  start: number;
  end: number;
  /** HTTP status; 0 when no answer came (timeout, connection error). */
  status: number;
  /** error.code of a refusal, 'timeout' or the connection error's name. */
  code?: string;
  xCache?: string | null;
  chargedMinor: number;
  /** The gateway's X-Request-Id (its log lines carry it). */
  requestId?: string | null;
}

export interface LoadOptions {
  /** Gateway base URLs; clients are spread over them. */
  urls: string[];
  paidToken: string;
  cachedToken: string;
  paid: number;
  cached: number;
  /** Companies for the paid clients, each read once (new: every read a charge). */
  newInns: string[];
  /** Companies the cached clients re-read (warm them first: warm()). */
  cachedInns: string[];
  /** The client's deadline: the request is aborted (an error) past it. */
  deadlineMs: number;
  /** Headers every request carries (the gateway-side deadline: X-Max-Wait-Ms). */
  headers?: Record<string, string>;
  /** Pause between one client's requests (ms), to keep the rate steady. */
  pauseMs?: number;
}

export interface Load {
  samples: Sample[];
  /** Stops the clients after their request in flight; resolves with every sample. */
  stop(): Promise<Sample[]>;
  /** How many paid companies were started so far. */
  paidStarted(): number;
}

async function one(
  url: string,
  token: string,
  inn: string,
  kind: Sample['kind'],
  o: LoadOptions,
): Promise<Sample> {
  const start = performance.now();
  try {
    const res = await fetch(`${url}/v1/companies/${inn}`, {
      headers: { authorization: `Bearer ${token}`, ...o.headers },
      signal: AbortSignal.timeout(o.deadlineMs),
    });
    const body = await res.text();
    let code: string | undefined;
    if (res.status !== 200) {
      try {
        code = (JSON.parse(body) as { error?: { code?: string } }).error?.code;
      } catch {
        code = 'not_json';
      }
    }
    return {
      kind,
      inn,
      start,
      end: performance.now(),
      status: res.status,
      ...(code ? { code } : {}),
      xCache: res.headers.get('x-cache'),
      chargedMinor: Number(res.headers.get('x-charged-minor') ?? 0),
      requestId: res.headers.get('x-request-id'),
    };
  } catch (err) {
    const name = (err as Error).name;
    return {
      kind,
      inn,
      start,
      end: performance.now(),
      status: 0,
      code: name === 'TimeoutError' ? 'timeout' : `${name}: ${(err as Error).message}`,
      chargedMinor: 0,
    };
  }
}

/** Reads each of `inns` once (charged), so the cached clients find them in the cache. */
export async function warm(url: string, token: string, inns: string[]): Promise<void> {
  for (const inn of inns) {
    const res = await fetch(`${url}/v1/companies/${inn}`, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`warming ${inn}: ${res.status}`);
  }
}

export function startLoad(o: LoadOptions): Load {
  const samples: Sample[] = [];
  let stopped = false;
  let nextPaid = 0;
  let nextCached = 0;
  const pause = () => (o.pauseMs ? new Promise((r) => setTimeout(r, o.pauseMs)) : Promise.resolve());
  const paidClient = async (i: number) => {
    while (!stopped && nextPaid < o.newInns.length) {
      const inn = o.newInns[nextPaid++]!;
      samples.push(await one(o.urls[i % o.urls.length]!, o.paidToken, inn, 'paid', o));
      await pause();
    }
  };
  const cachedClient = async (i: number) => {
    while (!stopped) {
      const inn = o.cachedInns[nextCached++ % o.cachedInns.length]!;
      samples.push(await one(o.urls[i % o.urls.length]!, o.cachedToken, inn, 'cached', o));
      await pause();
    }
  };
  const running = Promise.all([
    ...Array.from({ length: o.paid }, (_, i) => paidClient(i)),
    ...Array.from({ length: o.cached }, (_, i) => cachedClient(i + 1)),
  ]);
  return {
    samples,
    paidStarted: () => nextPaid,
    stop: async () => {
      stopped = true;
      await running;
      return samples;
    },
  };
}

export interface Failover {
  /** The key (after the prefix) whose slot's master was killed: `{money}:ledger`, `{limits}:w:key`. */
  slot: string;
  from: number;
  to: number;
  /** performance.now() at the SIGKILL and once the replica served the slot on every node. */
  killedAt: number;
  promotedAt: number;
}

/**
 * For each slot in turn: SIGKILLs its master, waits for its replica's promotion, then lets the
 * traffic run `settleMs` more on the promoted replica.
 */
export async function killMasters(
  cluster: TestCluster,
  prefix: string,
  slots: string[],
  settleMs: number,
): Promise<Failover[]> {
  const failovers: Failover[] = [];
  for (const slot of slots) {
    const key = `${prefix}${slot}`;
    const killedAt = performance.now();
    const from = await cluster.killMaster(key);
    const to = await cluster.promoted(key, from);
    failovers.push({ slot, from, to, killedAt, promotedAt: performance.now() });
    await new Promise((r) => setTimeout(r, settleMs));
  }
  return failovers;
}

/** Whether a request was in flight while one of the slots had no master (kill to promotion). */
export const inFailover = (failovers: Failover[]) => (s: Sample) =>
  failovers.some((f) => s.end >= f.killedAt && s.start <= f.promotedAt);

/** A client error: anything but 200 (these clients never pass a cap: no 402 is expected). */
export const isClientError = (s: Sample) => s.status !== 200;

/** Client errors by "status code" ("503 store_unavailable", "0 timeout"). */
export function errorsBy(samples: Sample[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples.filter(isClientError)) {
    const key = `${s.status} ${s.code ?? ''}`.trim();
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

/** p50, p99 and max of the requests' latencies (ms, one decimal). */
export function latencies(samples: Sample[]): { count: number; p50: number; p99: number; max: number } {
  const ms = samples.map((s) => s.end - s.start).sort((a, b) => a - b);
  const at = (q: number) => (ms.length ? ms[Math.min(ms.length - 1, Math.ceil(q * ms.length) - 1)]! : 0);
  const round = (x: number) => Math.round(x * 10) / 10;
  return { count: ms.length, p50: round(at(0.5)), p99: round(at(0.99)), max: round(ms.at(-1) ?? 0) };
}

export interface LedgerCompare {
  /** Upstream charges per company more than once (must be none). */
  doubled: string[];
  /** Companies the upstream charged that the gateway's ledger misses, and the reverse. */
  missing: string[];
  extra: string[];
  upstreamMinor: number;
  gatewayMinor: number;
  /** Sum of X-Charged-Minor the clients were told. */
  toldMinor: number;
  pending: number;
  outbox: number;
}

/**
 * Waits (up to `waitMs`) until no charge is pending and no record waits in an outbox, then sets
 * the gateway's ledger (GET /admin/ledger on `urls[0]`) beside the emulator's for `inns`.
 */
export async function compareLedgers(
  h: Harness,
  urls: string[],
  inns: string[],
  samples: Sample[],
  waitMs = 20_000,
): Promise<LedgerCompare> {
  const admin = { authorization: `Bearer ${h.adminToken}` };
  type Page = {
    entries: Array<{ inn: string; amount_minor: number }>;
    pending: unknown[];
    outbox: number;
    next_cursor: string | null;
  };
  const page = async (url: string, cursor: string | null) =>
    (await (
      await fetch(`${url}/admin/ledger?limit=10000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, {
        headers: admin,
      })
    ).json()) as Page;
  const until = Date.now() + waitMs;
  let pending = 0;
  let outbox = 0;
  for (;;) {
    const firsts = await Promise.all(urls.map((url) => page(url, null)));
    pending = firsts[0]!.pending.length;
    outbox = firsts.reduce((n, p) => n + p.outbox, 0);
    if ((pending === 0 && outbox === 0) || Date.now() > until) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const ours: Page['entries'] = [];
  for (let cursor: string | null = null, first = true; first || cursor; first = false) {
    const p: Page = await page(urls[0]!, cursor);
    ours.push(...p.entries);
    cursor = p.next_cursor;
  }
  const wanted = new Set(inns);
  const theirs = (await h.ledger()).entries.filter((e) => wanted.has(e.inn));
  const mine = ours.filter((e) => wanted.has(e.inn));
  const count = (list: Array<{ inn: string }>) => {
    const m = new Map<string, number>();
    for (const e of list) m.set(e.inn, (m.get(e.inn) ?? 0) + 1);
    return m;
  };
  const theirCount = count(theirs);
  const myCount = count(mine);
  return {
    doubled: [...theirCount].filter(([, n]) => n > 1).map(([inn]) => inn),
    missing: [...theirCount.keys()].filter((inn) => myCount.get(inn) !== theirCount.get(inn)),
    extra: [...myCount.keys()].filter((inn) => !theirCount.has(inn)),
    upstreamMinor: theirs.reduce((s, e) => s + e.amount_minor, 0),
    gatewayMinor: mine.reduce((s, e) => s + e.amount_minor, 0),
    toldMinor: samples.filter((s) => wanted.has(s.inn)).reduce((s, x) => s + x.chargedMinor, 0),
    pending,
    outbox,
  };
}
