// The governor's pure parts, each on its own: the typed store classes and their one string form,
// a waiting line (who is next, blocks, naps, what a late refusal reports), start verdicts, permits,
// and the local shares used while the Store is unreachable.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { limitClassesWith } from '../../src/limits/limit-classes.ts';
import { denial, permit } from '../../src/limits/permit.ts';
import { localShareOf, SlotFallback, type SlotStore } from '../../src/limits/slot-fallback.ts';
import { hopelessWaiters, refusalLastsMs, specsToRead } from '../../src/limits/start-verdict.ts';
import {
  baseClassOf,
  baseClassOfName,
  classSpec,
  decodeStoreClass,
  encodeStoreClass,
  isAppClass,
  type StoreClass,
} from '../../src/limits/store-class.ts';
import { WaitingLine } from '../../src/limits/waiting-line.ts';
import { StoreUnavailableError } from '../../src/store/store.ts';

describe('store classes', () => {
  const all: [StoreClass, string][] = [
    [{ kind: 'class', cls: 'search' }, 'search'],
    [{ kind: 'pace', cls: 'key' }, 'key:pace'],
    [{ kind: 'cap', cls: 'search', app: 'crm' }, 'search@crm'],
    [{ kind: 'share', cls: 'check', app: 'crm-2' }, 'check@crm-2:share'],
    [{ kind: 'waiting', cls: 'suggest', app: 'a_b' }, 'suggest@a_b:waiting'],
    [{ kind: 'minute', resetAtMs: 1_768_467_660_000 }, 'key~1768467660000'],
  ];

  it('encode and decode are each other’s inverse for every kind', () => {
    for (const [cls, name] of all) {
      expect(encodeStoreClass(cls)).toBe(name);
      expect(decodeStoreClass(name)).toEqual(cls);
    }
  });

  it('names the limiter never writes decode to null', () => {
    for (const bad of ['', 'nope', 'key~', 'key~12x', 'search@', 'other@crm', 'nope:pace', 'search@:share'])
      expect(decodeStoreClass(bad)).toBeNull();
  });

  it('knows the base class and which classes belong to one app', () => {
    expect(all.map(([c]) => baseClassOf(c))).toEqual(['search', 'key', 'search', 'check', 'suggest', 'key']);
    expect(all.map(([c]) => isAppClass(c))).toEqual([false, false, true, true, true, false]);
    expect(baseClassOfName('garbage')).toBe('key');
    expect(classSpec({ kind: 'cap', cls: 'search', app: 'crm' }, 5, 60_000)).toMatchObject({
      name: 'search@crm',
      limit: 5,
    });
  });
});

interface W {
  app: string;
  deadline: number;
}
const order = { weightOf: () => 1, priorityOf: () => 0 };

describe('waiting line', () => {
  it('skips an app blocked by its own cap, and forgets the block once served after it ends', () => {
    const line = new WaitingLine<W>(['search', 'key'], order);
    const a = { app: 'a', deadline: 10_000 };
    const b = { app: 'b', deadline: 10_000 };
    line.push(a);
    line.push(b);
    expect(line.next(0)).toBe(a);
    line.refused(
      'a',
      { cls: { kind: 'cap', cls: 'search', app: 'a' }, name: 'search@a', retryAfterMs: 500 },
      0,
    );
    expect(line.next(0)).toBe(b);
    expect(line.blockedNapMs(0)).toBe(500);
    expect(line.next(500)).toBe(a);
    // A refusal by the class itself blocks nobody.
    line.refused('b', { cls: { kind: 'class', cls: 'search' }, name: 'search', retryAfterMs: 900 }, 0);
    expect(line.isBlocked('b', 0)).toBe(false);
    expect(line.retryNapMs(900, 20, 1000, 0)).toBe(920);
    expect(line.retryNapMs(900, 20, 300, 0)).toBe(300);
  });

  it('a late refusal reports its own classes, never another app’s cap', () => {
    const line = new WaitingLine<W>(['search', 'key'], order);
    const mine = { app: 'mine', deadline: 100 };
    line.push(mine);
    line.refused(
      'other',
      { cls: { kind: 'cap', cls: 'search', app: 'other' }, name: 'search@other', retryAfterMs: 59_000 },
      0,
    );
    line.refused('mine', { cls: { kind: 'class', cls: 'search' }, name: 'search', retryAfterMs: 3000 }, 0);
    expect(line.overdue(101)).toEqual([mine]);
    expect(line.lateRetryAfterMs(['search', 'key', 'search@mine:share'], 101)).toBe(2899);
  });

  it('sleeps no longer than just past the nearest deadline', () => {
    const line = new WaitingLine<W>(['key'], order);
    line.push({ app: 'a', deadline: 250 });
    expect(line.retryNapMs(5000, 0, 1000, 0)).toBe(251);
  });
});

describe('start verdicts', () => {
  const key = classSpec({ kind: 'class', cls: 'check' }, 2, 60_000);
  const cap = classSpec({ kind: 'cap', cls: 'check', app: 'a' }, 1, 60_000);
  const share = classSpec({ kind: 'share', cls: 'check', app: 'a' }, 1, 60_000);
  const base = {
    appOf: (w: W) => w.app,
    deadlineOf: (w: W) => w.deadline,
    freesAt: () => undefined,
    isBlocked: () => false,
    windowOf: () => 60_000,
    now: 0,
  };
  const full = (name: string, ownExpiriesMs: number[]) => ({
    view: {
      limit: name === 'check' ? 2 : 1,
      windowMs: 60_000,
      used: ownExpiriesMs.length,
      pausedForMs: 0,
      ownExpiriesMs,
    },
    state: { name, used: ownExpiriesMs.length, pausedForMs: 0 },
  });

  it('refuses by queue position: the third waiter for two slots freeing at +50 s and +60 s', () => {
    const ws = [0, 1, 2].map(() => ({ app: 'b', deadline: 60_000 }));
    const out = hopelessWaiters({
      ...base,
      order: ws,
      candidates: new Set(ws),
      pathsOf: () => [[key]],
      viewOf: () => full('check', [50_000, 60_000]),
    });
    expect([...out.keys()]).toEqual([ws[2]]);
    expect(out.get(ws[2] as W)).toEqual({ limit: 'check', retryAfterMs: 110_000, reason: 'deadline' });
  });

  it('an app cap binds as app_cap; the share is skipped and not even read', () => {
    const w = { app: 'a', deadline: 1000 };
    const out = hopelessWaiters({
      ...base,
      order: [w],
      candidates: new Set([w]),
      pathsOf: () => [[key, cap, share]],
      viewOf: ({ name }) =>
        name === 'check@a' ? full(name, [30_000]) : name === 'check' ? full(name, []) : undefined,
    });
    expect(out.get(w)).toEqual({ limit: 'check', retryAfterMs: 30_000, reason: 'app_cap' });
    expect(specsToRead([w], () => [[key, cap, share]]).map((s) => s.name)).toEqual(['check', 'check@a']);
  });

  it('a pause that binds is reported as paused, though the refusal was read a few ms earlier', () => {
    const w = { app: 'a', deadline: 1000 };
    const pausedView = {
      view: { limit: 2, windowMs: 60_000, used: 0, pausedForMs: 6900, ownExpiriesMs: [] },
      state: { name: 'check', used: 0, pausedForMs: 6900 },
    };
    const out = hopelessWaiters({
      ...base,
      order: [w],
      candidates: new Set([w]),
      pathsOf: () => [[key]],
      viewOf: () => pausedView,
      freesAt: () => 6905,
    });
    expect(out.get(w)).toEqual({ limit: 'check', retryAfterMs: 6905, reason: 'paused' });
  });

  it('a share refusal lasts until the next reading of who waits; the minute cap until the reset', () => {
    expect(refusalLastsMs({ kind: 'share', cls: 'key', app: 'a' }, 40_000, { fairRefreshMs: 100 })).toBe(100);
    expect(
      refusalLastsMs({ kind: 'minute', resetAtMs: 1 }, 120_000, {
        fairRefreshMs: 100,
        minuteResetInMs: 7000,
      }),
    ).toBe(7000);
    expect(refusalLastsMs({ kind: 'class', cls: 'key' }, 1234, { fairRefreshMs: 100 })).toBe(1234);
  });
});

describe('permits', () => {
  it('release runs once, whatever the caller does', async () => {
    const calls: boolean[] = [];
    const p = permit(5, ['key'], async (sent) => {
      calls.push(sent);
    });
    await p.release(false);
    await p.release(true);
    expect(calls).toEqual([false]);
    expect(denial('key', 1.2, 'deadline')).toEqual({
      ok: false,
      limit: 'key',
      retryAfterMs: 2,
      reason: 'deadline',
    });
  });
});

describe('local shares while the Store is unreachable', () => {
  const classes = limitClassesWith({ check: { localLimit: 2 } });

  it('limit / expected replicas per class, pacing at least 1, hints unchanged, a configured localLimit', () => {
    const of = (name: string, limit: number) => localShareOf({ name, limit, windowMs: 60_000 }, classes, 2);
    expect(of('key', 60)).toBe(30);
    expect(of('search:pace', 1)).toBe(1);
    expect(of('key:pace', 5)).toBe(2);
    expect(of('search@crm', 5)).toBe(2);
    expect(of('key~1768467660000', 7)).toBe(3);
    expect(of('search@crm:share', 7)).toBe(7);
    expect(of('check', 4)).toBe(2);
  });

  it('falls back on a failing take, keeps its own slots, and goes back when the Store answers', async () => {
    const clock = new ManualClock();
    let up = true;
    const modes: boolean[] = [];
    const fail = async () => {
      throw new StoreUnavailableError('down');
    };
    const store: SlotStore & { ping(): Promise<void> } = {
      takeSlots: async () => (up ? { ok: true } : fail()),
      returnSlots: async () => (up ? undefined : fail()),
      pauseClass: async () => (up ? undefined : fail()),
      limiterState: async (specs) =>
        up ? specs.map((s) => ({ name: s.name, used: 0, pausedForMs: 0 })) : fail(),
      ping: async () => (up ? undefined : fail()),
    };
    const spec = { name: 'search', limit: 4, windowMs: 60_000 };
    const slots = new SlotFallback({
      store,
      clock,
      classes,
      probeMs: 250,
      ownSlots: () => [{ spec, id: 'own', at: clock.now() - 10_000 }],
      onModeChange: (local) => modes.push(local),
    });
    up = false;
    // The own slot taken 10 s ago counts: 1 more of the local 2, then refused until it leaves.
    expect(await slots.takeSlots([spec], 'x')).toEqual({ ok: true });
    expect(slots.isLocal).toBe(true);
    expect(await slots.takeSlots([spec], 'y')).toEqual({ ok: false, name: 'search', retryAfterMs: 50_000 });
    expect(await slots.limiterState([spec])).toEqual([{ name: 'search', used: 2, pausedForMs: 0 }]);
    expect(slots.limitOf(spec)).toBe(2);
    clock.advance(250);
    await new Promise((r) => setImmediate(r));
    expect(slots.isLocal).toBe(true);
    up = true;
    clock.advance(250);
    await new Promise((r) => setImmediate(r));
    expect(slots.isLocal).toBe(false);
    expect(modes).toEqual([true, false]);
    expect(slots.limitOf(spec)).toBe(4);
    slots.close();
  });
});
