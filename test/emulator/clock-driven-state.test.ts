// The emulator's clock-driven building blocks in isolation: the scheduler fires on advance
// in due order, windows and idempotency keys expire on the emulator clock, and "the same
// request" ignores query order and JSON key order.
import { describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../src/clock.ts';
import { ClockScheduler } from '../../src/emulator/clock-scheduler.ts';
import { CoverageWindows } from '../../src/emulator/coverage-windows.ts';
import {
  IDEMPOTENCY_TTL_MS,
  IdempotencyStore,
  requestFingerprint,
} from '../../src/emulator/idempotency-store.ts';

describe('clock scheduler', () => {
  it('fires due tasks in due order when the clock is advanced, and cancelled tasks never', () => {
    const clock = new ManualClock(0);
    const scheduler = new ClockScheduler(clock);
    const fired: string[] = [];
    scheduler.at(3_600_000, () => fired.push('hour'));
    scheduler.at(60_000, () => fired.push('minute'));
    const cancel = scheduler.at(1000, () => fired.push('cancelled'));
    scheduler.at(60_000, () => fired.push('minute-2'));
    cancel();
    clock.advance(59_999);
    scheduler.poke();
    expect(fired).toEqual([]);
    clock.advance(1);
    scheduler.poke();
    expect(fired).toEqual(['minute', 'minute-2']);
    clock.advance(3_600_000);
    scheduler.poke();
    expect(fired).toEqual(['minute', 'minute-2', 'hour']);
    expect(scheduler.pending).toBe(0);
    scheduler.close();
  });

  it('also fires on real timers', async () => {
    const scheduler = new ClockScheduler(systemClock);
    const fired = await new Promise<number>((resolve) => scheduler.after(20, () => resolve(Date.now())));
    expect(fired).toBeGreaterThan(0);
    scheduler.close();
  });
});

describe('coverage windows', () => {
  it('a requisites window never replaces a dossier window; expiry is exclusive', () => {
    const clock = new ManualClock(0);
    const windows = new CoverageWindows(clock, 900_000);
    windows.open(1, 'x', 'dossier');
    expect(windows.open(1, 'x', 'requisites').kind).toBe('dossier');
    expect(windows.covers(1, 'x', 'dossier')).toBe(true);
    expect(windows.covers(2, 'x', 'dossier')).toBe(false);
    clock.advance(899_999);
    expect(windows.covers(1, 'x', 'requisites')).toBe(true);
    clock.advance(1);
    expect(windows.get(1, 'x')).toBeNull();
    windows.open(1, 'y', 'requisites');
    expect(windows.covers(1, 'y', 'dossier')).toBe(false);
    expect(windows.open(1, 'y', 'dossier').kind).toBe('dossier');
  });
});

describe('idempotency store', () => {
  it('replays done keys for a day, refuses a different request and a key in progress', () => {
    const clock = new ManualClock(0);
    const store = new IdempotencyStore(clock);
    const begin = store.begin(1, 'k', 'A');
    expect(begin.kind).toBe('new');
    expect(() => store.begin(1, 'k', 'A')).toThrow(
      expect.objectContaining({ code: 'idempotency_in_progress' }),
    );
    expect(() => store.begin(1, 'k', 'B')).toThrow(
      expect.objectContaining({ code: 'idempotency_key_reused' }),
    );
    if (begin.kind === 'new') begin.finish({ status: 200, body: 'x' });
    expect(store.begin(1, 'k', 'A')).toEqual({ kind: 'replay', answer: { status: 200, body: 'x' } });
    expect(store.begin(2, 'k', 'B').kind).toBe('new');
    clock.advance(IDEMPOTENCY_TTL_MS);
    expect(store.begin(1, 'k', 'B').kind).toBe('new');
  });

  it('expired answers go oldest first, a key begun again counted from its new start', () => {
    const clock = new ManualClock(0);
    const store = new IdempotencyStore(clock);
    const done = (key: string) => {
      const b = store.begin(1, key, 'A');
      if (b.kind === 'new') b.finish({ status: 200, body: key });
    };
    done('first');
    clock.advance(IDEMPOTENCY_TTL_MS - 1);
    for (let i = 0; i < 1100; i++) done(`k${i}`);
    clock.advance(1); // 'first' has expired; the 1,100 have not
    done('first'); // begun again: from now on
    expect(store.size).toBe(1101);
    clock.advance(IDEMPOTENCY_TTL_MS - 1); // the 1,100 have expired, 'first' has not
    done('last');
    expect(store.size).toBe(2);
    expect(store.begin(1, 'first', 'A')).toEqual({ kind: 'replay', answer: { status: 200, body: 'first' } });
    expect(store.begin(1, 'k0', 'A').kind).toBe('new');
  });

  it('a released key (error answer) can be used again', () => {
    const store = new IdempotencyStore(new ManualClock(0));
    const first = store.begin(1, 'k', 'A');
    if (first.kind === 'new') first.finish(null);
    expect(store.begin(1, 'k', 'A').kind).toBe('new');
  });

  it('fingerprints ignore query order and JSON key order, not values', () => {
    const a = requestFingerprint('POST', '/v1/check', new URLSearchParams('b=2&a=1'), {
      inn: '1',
      purpose: 'dossier',
    });
    const b = requestFingerprint('POST', '/v1/check', new URLSearchParams('a=1&b=2'), {
      purpose: 'dossier',
      inn: '1',
    });
    const c = requestFingerprint('POST', '/v1/check', new URLSearchParams('a=1&b=2'), {
      purpose: 'requisites',
      inn: '1',
    });
    expect(a).toBe(b);
    expect(a).not.toBe(c);
  });
});
