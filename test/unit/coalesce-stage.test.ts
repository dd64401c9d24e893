// The coalesce stage when the leader is refused for its own app (its budget or its rate cap):
// the followers, of other apps, go on together again, one of them leading, so the read costs one
// more upstream call and one key slot, not one per follower. A refusal for everyone (the
// upstream down) is shared as it is.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { Coalescer } from '../../src/cost/coalescer.ts';
import { GatewayMetrics } from '../../src/metrics/gateway-metrics.ts';
import type { RequestContext } from '../../src/pipeline/context.ts';
import type { PipelineDeps } from '../../src/pipeline/deps.ts';
import { isRefusal, type Outcome } from '../../src/pipeline/outcome.ts';
import { refuse } from '../../src/pipeline/refusals.ts';
import { SendConditions } from '../../src/pipeline/send-conditions.ts';
import { coalesce } from '../../src/pipeline/stages/coalesce.ts';
import { routeSpec } from '../../src/route-table.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';

function setup() {
  const clock = new ManualClock();
  const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
  const coalescer = new Coalescer({ store, clock, distributed: false });
  const metrics = new GatewayMetrics({ apps: ['capped', 'free'], price: () => 9900, defaultMetrics: false });
  const stage = coalesce({ coalescer, metrics } as unknown as PipelineDeps);
  const ctx = (app: string): RequestContext =>
    ({
      requestId: app,
      route: { ...routeSpec('company'), name: 'company' },
      call: { params: { inn: '7707083893' }, query: {} },
      pathAndQuery: '/v1/companies/7707083893',
      app: { name: app },
      shape: { kind: 'dossier', inn: '7707083893', covered: 'dossier' },
      deadline: 10_000,
      sendWhen: new SendConditions(['lead', 'windows', 'charge']),
    }) as unknown as RequestContext;
  return { stage, ctx };
}

const ok: Outcome = { status: 200, headers: { 'x-charged-minor': '9900' }, body: Buffer.from('{}') };

describe('coalesce: a leader refused for its own app', () => {
  it.each(['rate_limited', 'budget_exceeded'] as const)(
    '%s: five followers of another app make one more call between them, not five',
    async (code) => {
      const { stage, ctx } = setup();
      let calls = 0;
      let releaseLeader!: () => void;
      const leaderGate = new Promise<void>((r) => {
        releaseLeader = r;
      });
      const next = async (): Promise<Outcome> => {
        calls++;
        if (calls === 1) {
          await leaderGate;
          return refuse(code);
        }
        await new Promise((r) => setTimeout(r, 5));
        return ok;
      };
      const leader = stage(ctx('capped'), next);
      const followers = Array.from({ length: 5 }, () => stage(ctx('free'), next));
      releaseLeader();
      const [lead, ...rest] = await Promise.all([leader, ...followers]);
      expect(isRefusal(lead!) && lead.code).toBe(code);
      for (const r of rest) expect(isRefusal(r!)).toBe(false);
      expect(calls).toBe(2);
    },
  );

  it('a refusal for everyone (the upstream unavailable) is shared, with no second call', async () => {
    const { stage, ctx } = setup();
    let calls = 0;
    const next = async (): Promise<Outcome> => {
      calls++;
      await new Promise((r) => setTimeout(r, 5));
      return refuse('upstream_unavailable');
    };
    const all = await Promise.all([
      stage(ctx('capped'), next),
      ...Array.from({ length: 3 }, () => stage(ctx('free'), next)),
    ]);
    for (const r of all) expect(isRefusal(r!) && r.code).toBe('upstream_unavailable');
    expect(calls).toBe(1);
  });
});
