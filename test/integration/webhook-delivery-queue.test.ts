// The apps' webhook delivery queue finds what is due without reading every record (each holds a
// whole event, kept 7 days): due markers, done markers and the sweep for an older version's
// records, over the memory store and a real Redis, with a real receiver on port 0. Before the
// markers the worker read every record each second and saw only the first 10,000: an event
// queued behind them was never sent (the first case fails that way on the old code). A Redis
// Cluster (three masters) runs the same cases when redis-server and redis-cli are here.
import { createServer, type ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type DeliveryRecord,
  SWEEP_EVERY_MS,
  WebhookDeliveries,
} from '../../src/checks/webhook-deliveries.ts';
import { ManualClock, systemClock } from '../../src/clock.ts';
import { createStore, MemoryStore, RedisStore } from '../../src/store/index.ts';
import type { StateStore } from '../../src/store/state-store.ts';
import { deleteKeysUnder, startTestRedis, type TestRedis, uniquePrefix } from '../helpers/redis.ts';
import { startTestCluster, type TestCluster } from '../helpers/redis-cluster.ts';
import { startReceiver, until } from '../helpers/webhook-receiver.ts';

const WEEK = 7 * 86_400_000;
const redis: TestRedis | null = await startTestRedis();
const cluster: TestCluster | null = await startTestCluster();
const prefixes: string[] = [];

interface Rig {
  store: StateStore & { close(): Promise<void> };
  clock: ManualClock;
  /** Record reads (`webhook:out:` GETs) since the last reset. */
  recordReads: () => number;
  resetReads: () => void;
}

/** The store, with its GETs of delivery records counted. */
function counted(store: StateStore & { close(): Promise<void> }, clock: ManualClock): Rig {
  let reads = 0;
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'get') {
        return (key: string) => {
          if (key.startsWith('webhook:out:')) reads += 1;
          return target.get(key);
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store: proxy, clock, recordReads: () => reads, resetReads: () => (reads = 0) };
}

const rigs: Array<[string, () => Rig]> = [
  [
    'memory',
    () => {
      const clock = new ManualClock(Date.now());
      return counted(new MemoryStore({ clock, cacheMaxBytes: 1024 * 1024 }), clock);
    },
  ],
];
if (redis) {
  rigs.push([
    'redis',
    () => {
      const prefix = uniquePrefix('webhook-queue');
      prefixes.push(prefix);
      // The store keeps real time (its TTLs are Redis's); the queue runs on the manual clock.
      const store = new RedisStore({
        url: redis.url,
        prefix,
        clock: systemClock,
        cacheMaxBytes: 1024 * 1024,
      });
      return counted(store, new ManualClock(Date.now()));
    },
  ]);
}

if (cluster) {
  rigs.push([
    'redis cluster',
    () => {
      const prefix = uniquePrefix('webhook-queue-cluster');
      const store = createStore({
        redisClusterNodes: cluster.nodes,
        prefix,
        clock: systemClock,
        cacheMaxBytes: 1024 * 1024,
        onError: () => {},
      });
      return counted(store, new ManualClock(Date.now()));
    },
  ]);
}

afterAll(async () => {
  await cluster?.stop();
  if (!redis) return;
  await deleteKeysUnder(redis.url, prefixes);
  await redis.stop();
});

function oldRecord(checkId: string, app: string, url: string, over: Partial<DeliveryRecord>): DeliveryRecord {
  return {
    checkId,
    app,
    url,
    eventId: `evt_${checkId}`,
    event: 'check.completed',
    body: JSON.stringify({ id: `evt_${checkId}`, event: 'check.completed', padding: 'x'.repeat(200) }),
    delivery: `dlv_${checkId}`,
    state: 'delivered',
    attempts: [{ at: 0, status: 200 }],
    nextAt: null,
    createdAt: 0,
    ...over,
  };
}

async function writeAll(store: StateStore, entries: Array<[string, string]>): Promise<void> {
  for (let i = 0; i < entries.length; i += 500) {
    await Promise.all(entries.slice(i, i + 500).map(([k, v]) => store.set(k, v, WEEK)));
  }
}

describe.each(rigs)('webhook delivery queue (%s store)', (_name, openRig) => {
  const opened: Rig[] = [];
  const makeRig = () => {
    const rig = openRig();
    opened.push(rig);
    return rig;
  };
  afterEach(async () => {
    for (const rig of opened.splice(0)) await rig.store.close();
  });
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    rx = await startReceiver({ '/failing': [500, 500, 500, 500], '/down': Array(20).fill(503) });
  });
  afterAll(() => rx.close());

  const queue = (rig: Rig, replicaId = 'r1') =>
    new WebhookDeliveries({
      store: rig.store,
      clock: rig.clock,
      secrets: { crm: 'crm-secret', erp: 'erp-secret' },
      timeoutMs: 5_000,
      retryDelaysMs: [0, 60_000, 300_000],
      intervalMs: 1_000,
      replicaId,
    });
  const sentTo = (path: string, eventId: string) =>
    rx.received.filter((r) => r.path === path && r.headers['x-service-event-id'] === eventId);

  it('an event queued behind 10,050 finished deliveries is sent at once; later runs read no record', async () => {
    const rig = makeRig();
    const url = `${rx.url}/crm`;
    // An older version's records: no markers.
    await writeAll(
      rig.store,
      Array.from({ length: 10_050 }, (_, i) => {
        const r = oldRecord(`chk_old${i}`, 'crm', url, {});
        return [`webhook:out:chk_old${i}:crm`, JSON.stringify(r)] as [string, string];
      }),
    );
    const q = queue(rig);
    await q.kick(); // the first run sweeps: each unmarked record read once and marked done
    expect(rig.recordReads()).toBe(10_050);
    rig.resetReads();

    const body = JSON.stringify({ id: 'evt_new', event: 'check.completed' });
    await q.enqueue({
      checkId: 'chk_new',
      app: 'crm',
      url,
      event: { id: 'evt_new', event: 'check.completed' },
      body,
    });
    await q.kick();
    expect(sentTo('/crm', 'evt_new')).toHaveLength(1);
    expect(rig.recordReads()).toBeLessThanOrEqual(2); // the new record, read under its lock

    rig.resetReads();
    for (let i = 0; i < 3; i++) {
      rig.clock.advance(1_000);
      await q.kick();
    }
    expect(rig.recordReads()).toBe(0);
    rig.clock.advance(SWEEP_EVERY_MS); // the next sweep finds every record marked
    await q.kick();
    expect(rig.recordReads()).toBe(0);
    expect(sentTo('/crm', 'evt_new')).toHaveLength(1);
    await q.close();
  }, 60_000);

  it('a pending record an older version left without a marker is retried on its schedule', async () => {
    const rig = makeRig();
    const now = rig.clock.now();
    const record = oldRecord('chk_left', 'crm', `${rx.url}/crm`, {
      state: 'pending',
      attempts: [{ at: now - 1_000, status: 503 }],
      nextAt: now + 60_000,
      createdAt: now - 1_000,
    });
    await rig.store.set('webhook:out:chk_left:crm', JSON.stringify(record), WEEK);
    const q = queue(rig);
    await q.kick();
    expect(sentTo('/crm', 'evt_chk_left')).toHaveLength(0); // marked, not yet due
    expect(await rig.store.get('webhook:due:chk_left:crm')).toBe(`${now + 60_000}:${now - 1_000}`);
    rig.clock.advance(60_000);
    await q.kick();
    const sent = sentTo('/crm', 'evt_chk_left');
    expect(sent).toHaveLength(1);
    expect(sent[0]!.headers['x-service-attempt']).toBe('2');
    const after = JSON.parse((await rig.store.get('webhook:out:chk_left:crm'))!) as DeliveryRecord;
    expect(after.state).toBe('delivered');
    expect(after.body).toBe(''); // the event is not kept past its delivery
    expect(await rig.store.get('webhook:done:chk_left:crm')).toBe(`delivered:${now - 1_000}`);
    expect(await rig.store.get('webhook:due:chk_left:crm')).toBeFalsy();
    await q.close();
  });

  it('retries move the marker; after the last one the record is failed and leaves the due list', async () => {
    const rig = makeRig();
    const q = queue(rig);
    const url = `${rx.url}/failing`;
    const event = { id: 'evt_fail', event: 'check.completed' };
    await q.enqueue({ checkId: 'chk_fail', app: 'crm', url, event, body: JSON.stringify(event) });
    await q.kick(); // attempts 1 and 2 (the second retry delay is 0)
    expect(sentTo('/failing', 'evt_fail')).toHaveLength(2);
    const created = rig.clock.now();
    expect(await rig.store.get('webhook:due:chk_fail:crm')).toBe(`${created + 60_000}:${created}`);
    rig.clock.advance(59_000);
    await q.kick();
    expect(sentTo('/failing', 'evt_fail')).toHaveLength(2);
    rig.clock.advance(1_000);
    await q.kick();
    expect(sentTo('/failing', 'evt_fail')).toHaveLength(3);
    rig.clock.advance(300_000);
    await q.kick();
    expect(sentTo('/failing', 'evt_fail')).toHaveLength(4);
    const record = JSON.parse((await rig.store.get('webhook:out:chk_fail:crm'))!) as DeliveryRecord;
    expect(record.state).toBe('failed');
    expect(JSON.parse(record.body)).toEqual(event); // kept for a redelivery
    expect(await rig.store.get('webhook:done:chk_fail:crm')).toBe(`failed:${created}`);
    expect(await rig.store.get('webhook:due:chk_fail:crm')).toBeFalsy();
    rig.clock.advance(3_600_000);
    await q.kick();
    expect(sentTo('/failing', 'evt_fail')).toHaveLength(4);
    await q.close();
  });

  it('a marker behind its record (a crash between the two writes) is put right without a send', async () => {
    const rig = makeRig();
    const url = `${rx.url}/crm`;
    const done = oldRecord('chk_crash', 'crm', url, {});
    await rig.store.set('webhook:out:chk_crash:crm', JSON.stringify(done), WEEK);
    await rig.store.set('webhook:due:chk_crash:crm', String(rig.clock.now() - 5_000), WEEK);
    // A marker whose record is gone, older than the grace; and a fresh one (an enqueue mid-way).
    await rig.store.set('webhook:due:chk_gone:crm', String(rig.clock.now() - 120_000), WEEK);
    await rig.store.set('webhook:due:chk_coming:crm', String(rig.clock.now()), WEEK);
    const q = queue(rig);
    await q.kick();
    expect(sentTo('/crm', 'evt_chk_crash')).toHaveLength(0);
    expect(await rig.store.get('webhook:due:chk_crash:crm')).toBeFalsy();
    expect(await rig.store.get('webhook:done:chk_crash:crm')).toBe('delivered:0');
    expect(await rig.store.get('webhook:due:chk_gone:crm')).toBeFalsy();
    expect(await rig.store.get('webhook:due:chk_coming:crm')).toBe(String(rig.clock.now()));
    await q.close();
  });

  it('the overview counts every delivery from the markers and reads only the records it shows', async () => {
    const rig = makeRig();
    const url = `${rx.url}/crm`;
    const now = rig.clock.now();
    await writeAll(rig.store, [
      ...Array.from({ length: 1_500 }, (_, i): [string, string] => [
        `webhook:out:chk_d${i}:crm`,
        JSON.stringify(oldRecord(`chk_d${i}`, 'crm', url, { createdAt: now - 10_000 + i })),
      ]),
      [
        'webhook:out:chk_f:crm',
        JSON.stringify(
          oldRecord('chk_f', 'crm', url, { state: 'failed', attempts: [{ at: 0, status: 500 }] }),
        ),
      ],
    ]);
    const q = queue(rig);
    await q.kick(); // the sweep marks the older version's records
    for (const id of ['chk_p1', 'chk_p2']) {
      const event = { id: `evt_${id}`, event: 'check.completed' };
      await q.enqueue({
        checkId: id,
        app: 'crm',
        url: `${rx.url}/down`,
        event,
        body: JSON.stringify(event),
      });
    }
    await q.kick();
    rig.resetReads();
    const all = await q.overview();
    expect([all.pending, all.delivered, all.failed]).toEqual([2, 1_500, 1]);
    expect(all.records).toHaveLength(100);
    expect(rig.recordReads()).toBe(100);
    rig.resetReads();
    const pending = await q.overview('pending', 10);
    expect(pending.records.map((r) => r.checkId).sort()).toEqual(['chk_p1', 'chk_p2']);
    expect(rig.recordReads()).toBe(2);
    const delivered = await q.overview('delivered', 5);
    // The newest first.
    expect(delivered.records.map((r) => r.checkId)).toEqual([
      'chk_d1499',
      'chk_d1498',
      'chk_d1497',
      'chk_d1496',
      'chk_d1495',
    ]);
    expect((await q.overview('failed')).records.map((r) => r.checkId)).toEqual(['chk_f']);
    await q.close();
  }, 60_000);

  it("an app whose endpoint hangs holds up only its own delivery, not another's", async () => {
    const hung: ServerResponse[] = [];
    const slow = createServer((req, res) => {
      req.resume();
      hung.push(res);
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', () => r()));
    const slowUrl = `http://127.0.0.1:${(slow.address() as { port: number }).port}/crm`;
    const rig = makeRig();
    const q = queue(rig);
    try {
      const a = { id: 'evt_hang', event: 'check.completed' };
      await q.enqueue({ checkId: 'chk_hang', app: 'crm', url: slowUrl, event: a, body: JSON.stringify(a) });
      await until(() => hung.length === 1 || undefined);
      const b = { id: 'evt_quick', event: 'check.completed' };
      const quick = {
        checkId: 'chk_quick',
        app: 'erp',
        url: `${rx.url}/erp`,
        event: b,
        body: JSON.stringify(b),
      };
      await q.enqueue(quick);
      await until(() => sentTo('/erp', 'evt_quick').length === 1 || undefined, 3_000);
      expect(hung).toHaveLength(1); // still waiting for its answer
      for (const res of hung) res.writeHead(204).end();
      await q.kick();
      const record = JSON.parse((await rig.store.get('webhook:out:chk_hang:crm'))!) as DeliveryRecord;
      expect(record.state).toBe('delivered');
      expect(record.attempts).toHaveLength(1);
    } finally {
      for (const res of hung) if (!res.writableEnded) res.end();
      await q.close();
      await new Promise<void>((r) => slow.close(() => r()));
    }
  });

  it('a redelivered failure gets the whole retry schedule again, its attempts kept', async () => {
    const rig = makeRig();
    const q = queue(rig);
    const event = { id: 'evt_again', event: 'check.completed' };
    const url = `${rx.url}/down`;
    await q.enqueue({ checkId: 'chk_again', app: 'crm', url, event, body: JSON.stringify(event) });
    await q.kick();
    rig.clock.advance(60_000);
    await q.kick();
    rig.clock.advance(300_000);
    await q.kick();
    expect(sentTo('/down', 'evt_again')).toHaveLength(4);
    expect((await q.overview('failed')).records.map((r) => r.checkId)).toEqual(['chk_again']);
    expect(await q.redeliver({ app: 'other' })).toBe(0);
    expect(await q.redeliver({ checkId: 'CHK_AGAIN' })).toBe(1);
    await q.kick(); // at once, then at once again (the first retry delay is 0)
    expect(sentTo('/down', 'evt_again')).toHaveLength(6);
    const record = JSON.parse((await rig.store.get('webhook:out:chk_again:crm'))!) as DeliveryRecord;
    expect([record.state, record.attempts.length, record.nextAt]).toEqual([
      'pending',
      6,
      rig.clock.now() + 60_000,
    ]);
    const overview = await q.overview();
    expect([overview.pending, overview.failed]).toEqual([1, 0]);
    await q.close();
  });

  it('two replicas running the same due marker send it once', async () => {
    const rig = makeRig();
    const a = queue(rig, 'r1');
    const b = queue(rig, 'r2');
    const event = { id: 'evt_twice', event: 'check.completed' };
    const input = {
      checkId: 'chk_twice',
      app: 'crm',
      url: `${rx.url}/crm`,
      event,
      body: JSON.stringify(event),
    };
    const added = await Promise.all([a.enqueue(input), b.enqueue(input)]);
    expect(added.filter(Boolean)).toHaveLength(1);
    await Promise.all([a.kick(), b.kick(), a.kick(), b.kick()]);
    rig.clock.advance(1_000);
    await Promise.all([a.kick(), b.kick()]);
    expect(sentTo('/crm', 'evt_twice')).toHaveLength(1);
    await Promise.all([a.close(), b.close()]);
  });
});
