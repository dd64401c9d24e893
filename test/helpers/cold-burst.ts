// A cold burst through a gateway harness (issue #12), shared by test/integration/limits-bursts
// and bench/limits-burst: `apps` read `companies` companies nobody asked for before, `reads`
// reads with `inFlight` in flight, then the emulator's request log and ledger (the truth) and
// the governor's own per-app figures (GET /admin/limits) are read back.
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, json } from './gateway-harness.ts';

export interface BurstAppState {
  name: string;
  granted: number;
  denied: Record<string, number>;
  wait_ms: { max: number; median: number };
}

export interface ColdBurst {
  /** Answers by HTTP status. */
  statuses: Record<string, number>;
  /** 429 refusals by details.reason ('upstream' when none). */
  reasons: Record<string, number>;
  /** Bodies of the answers that were not 200. */
  refusals: string[];
  tookMs: number;
  /** The emulator's company reads, start times sorted. */
  upstream: { at: number[]; paths: Set<string>; statuses: number[] };
  ledger: Awaited<ReturnType<Harness['ledger']>>;
  apps: BurstAppState[];
}

export async function coldBurst(
  h: Harness,
  o: { apps: string[]; companies: number; reads: number; inFlight: number; innsFrom: number },
): Promise<ColdBurst> {
  const inns = knownInns(o.companies, o.innsFrom);
  const statuses: Record<string, number> = {};
  const reasons: Record<string, number> = {};
  const refusals: string[] = [];
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < o.reads) {
      const i = next++;
      const res = await h.call(o.apps[i % o.apps.length]!, `/v1/companies/${inns[i % o.companies]}`);
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      if (res.status === 200) {
        await res.arrayBuffer();
        continue;
      }
      const text = await res.text();
      refusals.push(`${res.status} ${text}`);
      if (res.status === 429) {
        const reason = (JSON.parse(text) as { error: { details?: { reason?: string } } }).error.details
          ?.reason;
        reasons[reason ?? 'upstream'] = (reasons[reason ?? 'upstream'] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: o.inFlight }, worker));
  const tookMs = Math.round(performance.now() - started);
  const log = (await h.emu('/requests?route=company')) as {
    requests: Array<{ at_ms: number; path: string; status: number }>;
  };
  const admin = { headers: { authorization: `Bearer ${h.adminToken}` } };
  const state = await json(await fetch(`${h.gateway.url}/admin/limits`, admin));
  return {
    statuses,
    reasons,
    refusals,
    tookMs,
    upstream: {
      at: log.requests.map((r) => r.at_ms).sort((a, b) => a - b),
      paths: new Set(log.requests.map((r) => r.path)),
      statuses: log.requests.map((r) => r.status),
    },
    ledger: await h.ledger(),
    apps: (state.apps as BurstAppState[]).filter((a) => o.apps.includes(a.name)),
  };
}
