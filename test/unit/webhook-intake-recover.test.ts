// An upstream event stored (and acknowledged) by a run that died before processing it is
// processed by the next start, however many processed events the store keeps beside it (7 days
// of them). recover() used to look at the first 1,000 listed only (the oldest): an unfinished
// event behind them waited for the check poller instead. Memory store, manual clock; the
// completion records what it is given (its own effects have their tests in webhook-fanout).
import { describe, expect, it } from 'vitest';
import type { CheckCompletion, CheckEvent } from '../../src/checks/check-completion.ts';
import { WebhookIntake } from '../../src/checks/webhook-intake.ts';
import { ManualClock } from '../../src/clock.ts';
import { MemoryStore } from '../../src/store/index.ts';

const event = (i: number): CheckEvent => ({
  id: `evt_${i}`,
  event: 'check.completed',
  created_at: '2026-01-15T09:00:00Z',
  data: { check_id: `chk_${i}`, inn: '7707083893', found: true },
});

describe('WebhookIntake.recover', () => {
  it('processes an unfinished event stored behind 1,200 processed ones, once', async () => {
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, cacheMaxBytes: 1024 * 1024 });
    const completed: string[] = [];
    const completion = {
      complete: async (input: { event: CheckEvent }) => {
        completed.push(input.event.id);
      },
    } as unknown as CheckCompletion;
    const intake = () => new WebhookIntake({ store, clock, completion, replicaId: 'r1' });

    const first = intake();
    for (let i = 0; i < 1_200; i++) {
      const e = event(i);
      expect(await first.receive(e, Buffer.from(JSON.stringify(e)), 'http://gw')).toBe('accepted');
      await first.process(e.id);
    }
    // Acknowledged, then the process died before processing it.
    const left = event(1_200);
    expect(await first.receive(left, Buffer.from(JSON.stringify(left)), 'http://gw')).toBe('accepted');
    expect(completed).toHaveLength(1_200);

    expect(await intake().recover()).toBe(1);
    expect(completed.at(-1)).toBe('evt_1200');
    expect(completed).toHaveLength(1_201);
    expect(await intake().recover()).toBe(0); // processed once
    await store.close();
  });
});
