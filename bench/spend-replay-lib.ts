// The parts of the spend-replay benchmark (bench/spend-replay.ts) that tests use too: the seeded
// trace, the computed minima, and the replay in scaled time.
//
// Scaled time: the replay moves the emulator's and the gateways' injected clocks between events,
// so 120 trace-minutes take seconds. Everything the gateway decides on its own clock follows
// (windows, freshness, leases, the memory store's rate log). The Redis store's rate log does
// not: its sliding windows run on Redis server time (`redis.call('TIME')` in
// src/store/redis/slot-scripts.ts, on purpose: replicas with skewed clocks must agree), which no
// harness can move. Replayed as fast as it goes, the key calls of hours of trace land in one
// real minute there, and the replicas refuse everything after the 60th with their own 429
// (`limit: key, reason: deadline`). So a replay given `keyRoom` holds the trace still while the
// gateway's key log is nearly full: it waits in real time until slots have left the log, then
// moves the clocks back by the time it waited. The trace itself is replayed unchanged; the
// gateway never waits for a slot nor skips a prefetch because of the compression. On the memory
// store the log runs on the trace clock and never fills, so the replay never waits.
//
// Must never: move a clock back past an instant the gateway or the emulator may have recorded
// (only the bench's own idle wait is taken back), or count a gateway refusal as spend saved.
import { derivableMember } from '../src/cache/section-equivalence.ts';
import { seededRandom } from '../src/clock.ts';
import { SECTION_NAMES, type SectionName } from '../src/domain/requests.ts';
import { PREFETCH_RESERVE } from '../src/pipeline/stages/derive.ts';
import { knownInns } from '../test/emulator/emulator-harness.ts';
import type { Harness } from '../test/helpers/gateway-harness.ts';

export const APPS = ['crm', 'onboarding', 'risk', 'billing', 'sales'];
export const COMPANIES = 120;
const MINUTE = 60_000;
const WINDOW_MS = 15 * MINUTE;
const MAX_AGE = { dossier: 6 * 60 * MINUTE, requisites: 24 * 60 * MINUTE };

export type Read = { kind: 'dossier' } | { kind: 'requisites' } | { kind: 'section'; section: SectionName };
export interface TraceEvent {
  /** Trace time, ms from the start. */
  at: number;
  app: string;
  inn: string;
  read: Read;
}

/** The trace: Poisson arrivals (one every ~8 s), Zipf(1.1) companies, bursts of 1-4 follow-ups. */
export function generateTrace(seed: number, minutes: number): TraceEvent[] {
  const rnd = seededRandom(seed);
  const inns = knownInns(COMPANIES, 5000 + seed * 1000);
  const weights = inns.map((_, k) => 1 / (k + 1) ** 1.1);
  const total = weights.reduce((a, b) => a + b, 0);
  const company = () => {
    let x = rnd() * total;
    for (let k = 0; k < inns.length; k++) {
      x -= weights[k]!;
      if (x <= 0) return inns[k]!;
    }
    return inns[inns.length - 1]!;
  };
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const read = (dossierShare: number, requisitesShare: number): Read => {
    const x = rnd();
    if (x < dossierShare) return { kind: 'dossier' };
    if (x < dossierShare + requisitesShare) return { kind: 'requisites' };
    return { kind: 'section', section: pick(SECTION_NAMES) };
  };
  const events: TraceEvent[] = [];
  for (let t = 0; t < minutes * MINUTE; t += Math.max(1, Math.round(-Math.log(1 - rnd()) * 8_000))) {
    const inn = company();
    events.push({ at: t, app: pick(APPS), inn, read: read(0.3, 0.15) });
    if (rnd() < 0.35) {
      const n = 1 + Math.floor(rnd() * 4);
      for (let i = 0; i < n; i++)
        events.push({
          at: t + Math.floor(rnd() * 25 * MINUTE),
          app: pick(APPS),
          inn,
          read: read(0.25, 0.05),
        });
    }
  }
  return events.filter((e) => e.at < minutes * MINUTE).sort((a, b) => a.at - b.at);
}

export const pathOf = (e: TraceEvent) =>
  e.read.kind === 'dossier'
    ? `/v1/companies/${e.inn}`
    : e.read.kind === 'requisites'
      ? `/v1/requisites/${e.inn}`
      : `/v1/companies/${e.inn}/${e.read.section}`;

/** Whether the emulator's dossier of `inn` carries section `s` whole (the shared minimum's oracle). */
export function derivableOn(h: Harness): (inn: string, s: SectionName) => boolean {
  const complete = new Map<string, boolean>();
  return (inn, s) => {
    const key = `${inn}:${s}`;
    let v = complete.get(key);
    if (v === undefined) {
      const json = h.emulator.context.data.dossierJson(inn);
      v = json !== null && derivableMember(JSON.parse(json), s) !== undefined;
      complete.set(key, v);
    }
    return v;
  };
}

/** The minimum spend of an ideal gateway; `shared` treats the dossier and its whole members as one copy. */
export function minimum(
  events: TraceEvent[],
  prices: { dossier: number; requisites: number },
  derivable: (inn: string, s: SectionName) => boolean,
  shared: boolean,
): number {
  const dossierUntil = new Map<string, number>();
  const requisitesUntil = new Map<string, number>();
  const stored = new Map<string, number>();
  let spend = 0;
  for (const e of events) {
    const { inn, at } = e;
    const copy =
      e.read.kind === 'requisites'
        ? `r:${inn}`
        : e.read.kind === 'dossier' || (shared && derivable(inn, e.read.section))
          ? `d:${inn}`
          : `s:${inn}:${e.read.section}`;
    const maxAge = e.read.kind === 'requisites' ? MAX_AGE.requisites : MAX_AGE.dossier;
    const s = stored.get(copy);
    if (s !== undefined && at - s < maxAge) continue;
    const dw = dossierUntil.get(inn) ?? 0;
    const covered = e.read.kind === 'requisites' ? Math.max(dw, requisitesUntil.get(inn) ?? 0) > at : dw > at;
    if (!covered) {
      if (e.read.kind === 'requisites') {
        spend += prices.requisites;
        requisitesUntil.set(inn, at + WINDOW_MS);
      } else {
        spend += prices.dossier;
        dossierUntil.set(inn, at + WINDOW_MS);
      }
    }
    stored.set(copy, at);
    // One copy: any dossier-priced read inside (or opening) a window brings the dossier in free.
    if (shared && e.read.kind === 'section') stored.set(`d:${inn}`, at);
  }
  return spend;
}

export interface Run {
  spendMinor: number;
  charges: number;
  upstreamCalls: number;
  upstream429: number;
  /** Reads the gateway itself refused with 429 (its rate queue); must be 0 for a valid run. */
  gateway429: number;
  /** `<status> <X-Cache>` of every answer the apps got. */
  answers: Record<string, number>;
  /** Times the replay held the trace still for the gateway's key log, and for how long (real ms). */
  pauses: number;
  pausedMs: number;
  ledgerMatches?: boolean;
  /** The gateways' sections_from_dossier counters, summed over replicas. */
  derivation?: { derived: number; prefetches: Record<string, number> };
}

/** The key class of the gateway's shared rate log, as GET /admin/limits reports it. */
export type KeyRoom = () => Promise<{ limit: number; used: number }>;

export function keyRoomOf(gatewayUrl: string, adminToken: string): KeyRoom {
  return async () => {
    const res = await fetch(`${gatewayUrl}/admin/limits`, {
      headers: { authorization: `Bearer ${adminToken}` },
    });
    if (res.status !== 200) throw new Error(`GET /admin/limits: ${res.status}`);
    const body = (await res.json()) as { classes: Array<{ name: string; limit: number; used: number }> };
    const key = body.classes.find((c) => c.name === 'key');
    if (!key) throw new Error('GET /admin/limits has no key class');
    return { limit: key.limit, used: key.used };
  };
}

/**
 * Key slots that must be free before the next read: its own, a dossier prefetch it may start,
 * and the share the prefetch leaves alone (derive.ts skips it under PREFETCH_RESERVE).
 */
export function keySlotsNeeded(limit: number): number {
  return Math.max(1, Math.ceil(limit * PREFETCH_RESERVE)) + 2;
}

const realSleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ReplayOptions {
  /** The gateway's key log: hold the trace still while it is nearly full (see the header). */
  keyRoom?: KeyRoom;
  /** Real ms between two looks at the key log while holding. Default 250. */
  pollMs?: number;
}

export async function replay(
  h: Harness,
  events: TraceEvent[],
  send: (e: TraceEvent, i: number) => Promise<Response>,
  options: ReplayOptions = {},
): Promise<Run> {
  let now = 0;
  let pauses = 0;
  let pausedMs = 0;
  const answers: Record<string, number> = {};
  for (const [i, e] of events.entries()) {
    if (e.at > now) {
      h.advance(e.at - now);
      now = e.at;
    }
    if (options.keyRoom) {
      let room = await options.keyRoom();
      if (room.limit - room.used < keySlotsNeeded(room.limit)) {
        const started = performance.now();
        while (room.limit - room.used < keySlotsNeeded(room.limit)) {
          await realSleep(options.pollMs ?? 250);
          room = await options.keyRoom();
        }
        // Nothing was sent while holding: the trace clocks go back to where they stood.
        const waited = Math.round(performance.now() - started);
        h.advance(-waited);
        pauses++;
        pausedMs += waited;
      }
    }
    const res = await send(e, i);
    await res.arrayBuffer();
    const tag = `${res.status} ${res.headers.get('x-cache') ?? ''}`.trim();
    answers[tag] = (answers[tag] ?? 0) + 1;
  }
  // Let prefetches still in flight land before reading the ledger.
  await realSleep(200);
  const ledger = await h.ledger();
  const log = (await h.emu('/requests')) as { total: number; requests: Array<{ status: number }> };
  return {
    spendMinor: ledger.totals.amount_minor,
    charges: ledger.totals.count,
    upstreamCalls: log.total,
    upstream429: log.requests.filter((r) => r.status === 429).length,
    gateway429: Object.entries(answers)
      .filter(([tag]) => tag.startsWith('429'))
      .reduce((n, [, k]) => n + k, 0),
    answers,
    pauses,
    pausedMs,
  };
}

/** The gateways' derivation counters (GET /admin/cache/stats), summed over replicas. */
export async function derivationCounters(
  urls: string[],
  adminToken: string,
): Promise<{ derived: number; prefetches: Record<string, number> }> {
  const out = { derived: 0, prefetches: {} as Record<string, number> };
  for (const url of urls) {
    const res = await fetch(`${url}/admin/cache/stats`, {
      headers: { authorization: `Bearer ${adminToken}` },
    });
    const body = (await res.json()) as {
      sections_from_dossier: { derived: number; prefetches: Record<string, number> };
    };
    out.derived += body.sections_from_dossier.derived;
    for (const [k, v] of Object.entries(body.sections_from_dossier.prefetches))
      out.prefetches[k] = (out.prefetches[k] ?? 0) + v;
  }
  return out;
}

/** The gateway's own ledger total (GET /admin/ledger, every page), to compare with the emulator's. */
export async function gatewayLedgerTotal(url: string, adminToken: string): Promise<number> {
  let total = 0;
  let next = `${url}/admin/ledger?format=json&limit=10000`;
  for (;;) {
    const res = await fetch(next, { headers: { authorization: `Bearer ${adminToken}` } });
    const page = (await res.json()) as { total_minor: number; complete: boolean; next_cursor: string | null };
    total += page.total_minor;
    if (page.complete || !page.next_cursor) return total;
    next = `${url}/admin/ledger?format=json&limit=10000&cursor=${encodeURIComponent(page.next_cursor)}`;
  }
}
