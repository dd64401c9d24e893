// Benchmark: what the account pays for a day-like mix of reads, against computed minima (issue #14).
// A seeded synthetic trace (5 apps, a Zipf company mix, same-company bursts, dossier / section /
// requisites reads over --minutes of trace time) is replayed in scaled time (the harness moves
// the emulator's and the gateways' clocks between events) three ways: straight to the emulator,
// through one gateway on the memory store, and (--redis) through two gateway replicas sharing
// Redis, alternating. Spend is the emulator's ledger. Minima are computed from the trace:
//   per-path  a gateway that caches each path (dossier, each section, requisites) on its own
//   shared    one cached copy per company: the dossier and every section it carries whole
//             (an oracle: which member is complete comes from the emulator's data); any
//             section read that is charged or inside a window brings that copy in free
// Both know the windows exactly (no safety margin) and never pay twice inside one.
// Prints a table and writes bench/results/spend-replay.json.
//   node bin/run-ts.js bench/spend-replay.ts [--seeds 1,2,3] [--minutes 120] [--redis]
// Must never: FLUSHDB/FLUSHALL (the Redis replicas use a unique prefix, deleted at the end).
import { mkdir, writeFile } from 'node:fs/promises';
import { derivableMember } from '../src/cache/section-equivalence.ts';
import { seededRandom } from '../src/clock.ts';
import { SECTION_NAMES, type SectionName } from '../src/domain/requests.ts';
import { knownInns } from '../test/emulator/emulator-harness.ts';
import {
  type Harness,
  startHarness,
  startRedisReplicas,
  UPSTREAM_KEY,
} from '../test/helpers/gateway-harness.ts';

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const SEEDS = (arg('--seeds') ?? '1,2,3').split(',').map(Number);
const MINUTES = Number(arg('--minutes') ?? 120);
const REDIS = process.argv.includes('--redis');
const APPS = ['crm', 'onboarding', 'risk', 'billing', 'sales'];
const COMPANIES = 120;
const MINUTE = 60_000;
const WINDOW_MS = 15 * MINUTE;
const MAX_AGE = { dossier: 6 * 60 * MINUTE, requisites: 24 * 60 * MINUTE };

type Read = { kind: 'dossier' } | { kind: 'requisites' } | { kind: 'section'; section: SectionName };
interface Event {
  at: number;
  app: string;
  inn: string;
  read: Read;
}

/** The trace: Poisson arrivals (one every ~8 s), Zipf(1.1) companies, bursts of 1-4 follow-ups. */
export function generateTrace(seed: number, minutes: number): Event[] {
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
  const events: Event[] = [];
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

export const pathOf = (e: Event) =>
  e.read.kind === 'dossier'
    ? `/v1/companies/${e.inn}`
    : e.read.kind === 'requisites'
      ? `/v1/requisites/${e.inn}`
      : `/v1/companies/${e.inn}/${e.read.section}`;

/** The minimum spend of an ideal gateway; `shared` treats the dossier and its whole members as one copy. */
export function minimum(
  events: Event[],
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

interface Run {
  spendMinor: number;
  charges: number;
  upstreamCalls: number;
  upstream429: number;
  answers: Record<string, number>;
  ledgerMatches?: boolean;
}

export async function replay(
  h: Harness,
  events: Event[],
  send: (e: Event, i: number) => Promise<Response>,
): Promise<Run> {
  let now = 0;
  const answers: Record<string, number> = {};
  for (const [i, e] of events.entries()) {
    if (e.at > now) {
      h.advance(e.at - now);
      now = e.at;
    }
    const res = await send(e, i);
    await res.arrayBuffer();
    const tag = `${res.status} ${res.headers.get('x-cache') ?? ''}`.trim();
    answers[tag] = (answers[tag] ?? 0) + 1;
  }
  // Let prefetches still in flight land before reading the ledger.
  await new Promise((r) => setTimeout(r, 200));
  const ledger = await h.ledger();
  const log = (await h.emu('/requests')) as { total: number; requests: Array<{ status: number }> };
  return {
    spendMinor: ledger.totals.amount_minor,
    charges: ledger.totals.count,
    upstreamCalls: log.total,
    upstream429: log.requests.filter((r) => r.status === 429).length,
    answers,
  };
}

async function gatewayLedgerTotal(url: string, adminToken: string): Promise<number> {
  const res = await fetch(`${url}/admin/ledger?format=json`, {
    headers: { authorization: `Bearer ${adminToken}` },
  });
  return ((await res.json()) as { total_minor: number }).total_minor;
}

const apps = APPS.map((name) => ({ name }));

async function main() {
  const results: Record<string, unknown>[] = [];
  for (const seed of SEEDS) {
    const events = generateTrace(seed, MINUTES);
    const row: Record<string, unknown> = { seed, events: events.length };
    // Direct: every read straight to the emulator with the upstream key.
    {
      const h = await startHarness({ apps });
      const prices = h.emulator.config.prices as unknown as { dossier: number; requisites: number };
      const complete = new Map<string, boolean>();
      const derivable = (inn: string, s: SectionName) => {
        const key = `${inn}:${s}`;
        let v = complete.get(key);
        if (v === undefined) {
          const json = h.emulator.context.data.dossierJson(inn);
          v = json !== null && derivableMember(JSON.parse(json), s) !== undefined;
          complete.set(key, v);
        }
        return v;
      };
      row.minPerPathMinor = minimum(events, prices, derivable, false);
      row.minSharedMinor = minimum(events, prices, derivable, true);
      row.direct = await replay(h, events, (e) =>
        fetch(`${h.emulator.url}${pathOf(e)}`, { headers: { authorization: `Bearer ${UPSTREAM_KEY}` } }),
      );
      await h.close();
    }
    {
      const h = await startHarness({ apps });
      const run = await replay(h, events, (e) => h.call(e.app, pathOf(e)));
      run.ledgerMatches = (await gatewayLedgerTotal(h.gateway.url, h.adminToken)) === run.spendMinor;
      row.memory = run;
      await h.close();
    }
    if (REDIS) {
      const r = await startRedisReplicas({ apps });
      if (r) {
        const { h, second } = r;
        const run = await replay(h, events, (e, i) =>
          i % 2 === 0
            ? h.call(e.app, pathOf(e))
            : fetch(`${second.url}${pathOf(e)}`, { headers: { authorization: `Bearer ${h.tokens[e.app]}` } }),
        );
        run.ledgerMatches = (await gatewayLedgerTotal(h.gateway.url, h.adminToken)) === run.spendMinor;
        row.redis2 = run;
        await r.close();
      }
    }
    const shared = row.minSharedMinor as number;
    const perPath = row.minPerPathMinor as number;
    const ratio = (x: unknown) => (x ? Number(((x as Run).spendMinor / shared).toFixed(3)) : null);
    row.ratios = {
      direct_vs_shared: ratio(row.direct),
      memory_vs_shared: ratio(row.memory),
      redis2_vs_shared: ratio(row.redis2),
      perPath_vs_shared: Number((perPath / shared).toFixed(3)),
    };
    results.push(row);
    console.log(
      `seed ${seed}: ${events.length} reads; minima per-path ${perPath}, shared ${shared}; direct ${(row.direct as Run).spendMinor}; ` +
        `memory ${(row.memory as Run).spendMinor} (${ratio(row.memory)}x shared)` +
        (row.redis2 ? `; 2x redis ${(row.redis2 as Run).spendMinor} (${ratio(row.redis2)}x)` : ''),
    );
  }
  await mkdir('bench/results', { recursive: true });
  await writeFile(
    'bench/results/spend-replay.json',
    `${JSON.stringify({ minutes: MINUTES, apps: APPS.length, companies: COMPANIES, results }, null, 2)}\n`,
  );
}

if (!process.env.SPEND_REPLAY_NO_MAIN) await main();
