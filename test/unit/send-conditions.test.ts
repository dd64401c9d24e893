// The send conditions (src/pipeline/send-conditions.ts): the waits three stages start for the
// upstream stage, judged in the order index.ts declares. The first "no" in that order decides
// (a follower follows whatever else was refused), a failed wait is a "no", and the rate queue's
// early leave comes as soon as any one says no.
import { describe, expect, it } from 'vitest';
import { SEND_CONDITIONS } from '../../src/pipeline/index.ts';
import { SendConditions } from '../../src/pipeline/send-conditions.ts';

function later<T>(): { promise: Promise<T>; settle: (v: T) => void; fail: (e: unknown) => void } {
  let settle!: (v: T) => void;
  let fail!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    settle = res;
    fail = rej;
  });
  return { promise, settle, fail };
}

describe('send conditions', () => {
  it('nothing registered: met at once, nothing unmet', async () => {
    const c = new SendConditions(SEND_CONDITIONS);
    expect(c.empty).toBe(true);
    expect(await c.allMet()).toBe(true);
    expect(await c.unmet()).toBeNull();
  });

  it('the lead decides before the charge even when the charge said no first', async () => {
    const c = new SendConditions(SEND_CONDITIONS);
    const lead = later<boolean>();
    c.set('lead', lead.promise);
    c.set('charge', Promise.resolve(false));
    const met = c.allMet();
    const why = c.unmet();
    // The queue is left as soon as the charge said no; which "no" it was waits for the lead.
    expect(await met).toBe(false);
    lead.settle(false);
    expect(await why).toBe('not_leader');
  });

  it('a lead that said yes leaves the first other "no" to decide; a failed wait is a no', async () => {
    const c = new SendConditions(SEND_CONDITIONS);
    c.set('lead', Promise.resolve(true));
    const windows = later<boolean>();
    c.set('windows', windows.promise);
    c.set('charge', Promise.resolve(true));
    windows.fail(new Error('store down'));
    expect(await c.unmet()).toBe('windows_disagree');
    expect(await c.get('windows')).toBe(false);
  });

  it('all said yes: sent; cleared (a stage starting over) nothing is left to wait for', async () => {
    const c = new SendConditions(SEND_CONDITIONS);
    c.set('windows', Promise.resolve(true));
    c.set('charge', Promise.resolve(true));
    expect(await c.allMet()).toBe(true);
    expect(await c.unmet()).toBeNull();
    c.set('charge', Promise.resolve(false));
    expect(await c.unmet()).toBe('charge_not_opened');
    c.clear();
    expect(c.empty).toBe(true);
    expect(c.get('charge')).toBeUndefined();
  });
});
