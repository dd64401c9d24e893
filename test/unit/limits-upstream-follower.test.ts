// Following the upstream on its own: the minute cap's arithmetic (calls still in flight are not in
// the upstream's Remaining yet), which broadcasts from other replicas are believed, and two
// followers on one memory store standing in for two replicas (limit and cap shared, the lowest
// cap of a minute kept, pauses shared through the Store, faults reported and survived).
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { ClassBook } from '../../src/limits/class-book.ts';
import { FairShare } from '../../src/limits/fair-share.ts';
import { limitClassesWith } from '../../src/limits/limit-classes.ts';
import { OwnSlots } from '../../src/limits/own-slots.ts';
import { classSpec } from '../../src/limits/store-class.ts';
import {
  decodeLimitsChange,
  encodeLimitsChange,
  LIMITS_CHANNEL,
  minuteCapLimit,
  UpstreamFollower,
} from '../../src/limits/upstream-follower.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import type { Store } from '../../src/store/store.ts';

/** The memory store delivers published messages on a later turn of the event loop. */
const flush = async (times = 3) => {
  for (let i = 0; i < times; i++) await new Promise((r) => setImmediate(r));
};

/** One replica's class book with the default classes, on `store`. */
function classBook(store: Store, clock: ManualClock, instance: string, onError: (e: unknown) => void) {
  const classes = limitClassesWith();
  const fair = new FairShare({
    store,
    now: () => clock.now(),
    instance,
    refreshMs: 100,
    windowOf: (c) => classes[c].windowMs,
    weightOf: () => 1,
    knownApps: () => [],
    onError,
  });
  return new ClassBook(clock, classes, [], fair, 1000);
}

describe('minuteCapLimit', () => {
  it("subtracts this replica's OTHER key calls in flight: the observed one is counted upstream", () => {
    expect(minuteCapLimit({ route: 'company', logged: 5, remaining: 4, keyCallsInFlight: 3 })).toBe(7);
    expect(minuteCapLimit({ route: 'search', logged: 5, remaining: 4, keyCallsInFlight: 3 })).toBe(7);
    expect(minuteCapLimit({ route: 'company', logged: 5, remaining: 4, keyCallsInFlight: 0 })).toBe(9);
  });

  it('counts every key call in flight as other when the route does not spend key (suggest)', () => {
    expect(minuteCapLimit({ route: 'suggest', logged: 5, remaining: 4, keyCallsInFlight: 3 })).toBe(6);
  });

  it('is never negative', () => {
    expect(minuteCapLimit({ route: 'company', logged: 0, remaining: 1, keyCallsInFlight: 5 })).toBe(0);
  });
});

describe('broadcasts between replicas', () => {
  const reset = Date.UTC(2026, 0, 15, 9, 1, 0);

  it("round-trips a change; a replica's own message is skipped", () => {
    const message = encodeLimitsChange('a', { keyLimit: 30, minuteCap: { resetAtMs: reset, limit: 4 } });
    expect(decodeLimitsChange(message, 'b')).toEqual({
      keyLimit: 30,
      minuteCap: { resetAtMs: reset, limit: 4 },
    });
    expect(decodeLimitsChange(message, 'a')).toBeNull();
  });

  it('keeps only a positive integer key limit', () => {
    for (const keyLimit of [0, -3, 2.5, '7', null])
      expect(decodeLimitsChange(JSON.stringify({ from: 'a', keyLimit }), 'b')).toEqual({});
  });

  it('keeps a minute cap only with a finite reset and an integer limit; a negative limit is 0', () => {
    const decode = (minuteCap: unknown) => decodeLimitsChange(JSON.stringify({ from: 'a', minuteCap }), 'b');
    expect(decode({ resetAtMs: reset, limit: -2 })).toEqual({ minuteCap: { resetAtMs: reset, limit: 0 } });
    expect(decode({ resetAtMs: reset, limit: 1.5 })).toEqual({});
    expect(decode({ resetAtMs: 'soon', limit: 3 })).toEqual({});
    expect(decode({ limit: 3 })).toEqual({});
    expect(decode(null)).toEqual({});
    // Its Remaining is kept only as an integer >= 0 (the cap without it otherwise).
    expect(decode({ resetAtMs: reset, limit: 3, remaining: 7 })).toEqual({
      minuteCap: { resetAtMs: reset, limit: 3, remaining: 7 },
    });
    for (const remaining of [-1, 2.5, '7', null])
      expect(decode({ resetAtMs: reset, limit: 3, remaining })).toEqual({
        minuteCap: { resetAtMs: reset, limit: 3 },
      });
  });

  it('throws on a message that is not a JSON object (the follower reports it)', () => {
    expect(() => decodeLimitsChange('{', 'b')).toThrow(SyntaxError);
    expect(() => decodeLimitsChange('null', 'b')).toThrow(TypeError);
    expect(() => decodeLimitsChange('5', 'b')).toThrow(TypeError);
  });
});

describe('UpstreamFollower: two replicas on one store', () => {
  let followers: UpstreamFollower[] = [];
  afterEach(async () => {
    for (const f of followers) await f.close();
    followers = [];
  });

  function replica(store: Store, clock: ManualClock, instance: string, inFlight = 0) {
    const errors: unknown[] = [];
    const book = classBook(store, clock, instance, (e) => errors.push(e));
    const seen = { changes: 0, errors, inFlight };
    const follower = new UpstreamFollower({
      store,
      bus: store,
      clock,
      book,
      instance,
      resetMarginMs: 1000,
      fallbackPauseMs: 1000,
      maxPauseMs: 600_000,
      keyCallsInFlight: () => seen.inFlight,
      onChange: () => seen.changes++,
      onError: (e) => errors.push(e),
    });
    followers.push(follower);
    return { book, follower, seen };
  }

  function setup() {
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
    return { clock, store, a: replica(store, clock, 'a'), b: replica(store, clock, 'b') };
  }

  it('X-RateLimit-Limit: set here, sent once, applied there; the same limit again sends nothing', async () => {
    const { a, b } = setup();
    await flush();
    await a.follower.observe('company', 200, { 'X-RateLimit-Limit': '7' });
    await flush();
    expect(a.book.keyLimit).toBe(7);
    expect(b.book.keyLimit).toBe(7);
    // a: its own observe only (its broadcast comes back and is skipped); b: the broadcast.
    expect([a.seen.changes, b.seen.changes]).toEqual([1, 1]);
    await a.follower.observe('company', 200, { 'X-RateLimit-Limit': '7' });
    await flush();
    expect([a.seen.changes, b.seen.changes]).toEqual([2, 1]);
  });

  it('X-RateLimit-Remaining: the cap counts key calls in flight, is shared, and the newest count wins', async () => {
    const { clock, a, b } = setup();
    await flush();
    a.seen.inFlight = 3; // the observed call and two others
    const resetSec = Math.floor(clock.now() / 1000) + 30;
    const reset = resetSec * 1000;
    const answer = (remaining: number) => ({
      'X-RateLimit-Remaining': String(remaining),
      'X-RateLimit-Reset': String(resetSec),
    });
    await a.follower.observe('company', 200, answer(4));
    await flush();
    const cap = { resetAtMs: reset, limit: 2, remaining: 4, by: 'a', uncounted: 2 };
    expect(a.book.minuteCap).toEqual(cap);
    expect(b.book.minuteCap).toEqual(cap);

    // An answer of b's with an older count (a higher Remaining) changes nothing: the cap is a's.
    await b.follower.observe('company', 200, answer(9));
    await flush();
    expect(a.book.minuteCap).toEqual(cap);
    expect(b.book.minuteCap).toEqual(cap);

    await b.follower.observe('company', 200, answer(1));
    await flush();
    expect(a.book.minuteCap).toMatchObject({ limit: 1, remaining: 1, by: 'b', uncounted: 0 });
    expect(b.book.minuteCap).toMatchObject({ limit: 1, remaining: 1, by: 'b', uncounted: 0 });
  });

  it('X-RateLimit-Remaining: calls in flight that answer with an older count were counted: the cap gives them back', async () => {
    const { clock, store, a, b } = setup();
    await flush();
    const resetSec = Math.floor(clock.now() / 1000) + 30;
    const reset = resetSec * 1000;
    const answer = (remaining: number) => ({
      'X-RateLimit-Remaining': String(remaining),
      'X-RateLimit-Reset': String(resetSec),
    });
    // A burst: 20 key calls start (in the minute's log), the upstream counts all 20, and the one
    // it counted last answers first (39 left) while the 19 others are still in flight: counted as
    // perhaps not seen upstream, the cap is 20 - 19 + 39 = 40, not the 59 it is.
    const log = { name: `key~${reset}`, limit: 1_000_000, windowMs: 121_000 };
    for (let i = 0; i < 20; i++) await store.takeSlots([log], `call-${i}`);
    a.seen.inFlight = 20;
    await a.follower.observe('company', 200, answer(39));
    await flush();
    expect(a.book.minuteCap).toEqual({ resetAtMs: reset, limit: 40, remaining: 39, by: 'a', uncounted: 19 });
    // The 19 others answer with the counts they got (40..58): each was counted after all.
    for (let r = 58; r >= 40; r--) {
      a.seen.inFlight--;
      await a.follower.observe('company', 200, answer(r));
    }
    await flush();
    expect(a.book.minuteCap).toEqual({ resetAtMs: reset, limit: 59, remaining: 39, by: 'a', uncounted: 0 });
    expect(b.book.minuteCap).toEqual(a.book.minuteCap);
    // Nothing left to give back: another older count changes nothing.
    await a.follower.observe('company', 200, answer(45));
    expect(a.book.minuteCap?.limit).toBe(59);
    // A newer count wins as it is: 20 logged + 1 more call, 0 in flight, 37 left.
    await store.takeSlots([log], 'call-20');
    a.seen.inFlight = 1;
    await a.follower.observe('company', 200, answer(37));
    await flush();
    expect(b.book.minuteCap).toEqual({ resetAtMs: reset, limit: 58, remaining: 37, by: 'a', uncounted: 0 });
  });

  it('X-RateLimit-Remaining: 0 pauses key in the Store until the reset plus the margin', async () => {
    const { clock, store, a } = setup();
    const resetSec = Math.floor(clock.now() / 1000) + 20;
    await a.follower.observe('me', 200, {
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(resetSec),
    });
    const [key] = await store.limiterState([{ name: 'key', limit: 60, windowMs: 60_000 }]);
    expect(key?.pausedForMs).toBe(resetSec * 1000 + 1000 - clock.now());
    expect(a.book.minuteCap).toBeNull();
  });

  it("a 429 pauses the route's own class for Retry-After seconds; quota_exceeded pauses nothing", async () => {
    const { store, a } = setup();
    const state = async () =>
      Object.fromEntries(
        (
          await store.limiterState(
            ['search', 'key', 'person'].map((name) => ({ name, limit: 60, windowMs: 60_000 })),
          )
        ).map((s) => [s.name, s.pausedForMs]),
      );
    await a.follower.observe('search', 429, { 'Retry-After': '7' }, 'rate_limited');
    expect(await state()).toEqual({ search: 7000, key: 0, person: 0 });
    await a.follower.observe('company', 429, { 'Retry-After': '60' }, 'quota_exceeded');
    expect((await state()).key).toBe(0);
  });

  it('observe does not wait for its broadcast; changes made meanwhile go out merged, the newest last', async () => {
    const clock = new ManualClock();
    const memory = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
    const sent: string[] = [];
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const slow = Object.create(memory) as Store;
    slow.publish = async (channel, message) => {
      sent.push(message);
      if (sent.length === 1) await gate; // the first publish hangs until the test opens it
      return memory.publish(channel, message);
    };
    const a = replica(slow, clock, 'a');
    const b = replica(memory, clock, 'b');
    await flush();
    const resetSec = Math.floor(clock.now() / 1000) + 30;
    const answer = (remaining: number) => ({
      'X-RateLimit-Remaining': String(remaining),
      'X-RateLimit-Reset': String(resetSec),
    });
    await a.follower.observe('company', 200, answer(9));
    await a.follower.observe('company', 200, { 'X-RateLimit-Limit': '30', ...answer(8) });
    await a.follower.observe('company', 200, answer(7));
    expect(a.book.minuteCap).toMatchObject({ remaining: 7, limit: 7 });
    expect(sent).toHaveLength(0); // sent from the next turn of the event loop
    await flush(1);
    expect(sent).toHaveLength(1); // the first, all three merged (none was sent before)
    await a.follower.observe('company', 200, answer(6));
    await flush();
    expect(sent).toHaveLength(1); // waits for the first, which hangs
    open();
    await a.follower.shared();
    await flush();
    expect(sent).toHaveLength(2);
    expect(JSON.parse(sent[0]!)).toMatchObject({ keyLimit: 30, minuteCap: { remaining: 7 } });
    expect(JSON.parse(sent[1]!)).toMatchObject({ minuteCap: { remaining: 6 } });
    expect(b.book.minuteCap).toEqual(a.book.minuteCap);
    expect(b.book.keyLimit).toBe(30);
    // a's own broadcasts came back and were skipped (no change, no error).
    expect([a.seen.changes, a.seen.errors]).toEqual([4, []]);
  });

  it('a lost broadcast is reported and the change still holds here', async () => {
    const clock = new ManualClock();
    const memory = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
    const failing = Object.create(memory) as Store;
    failing.publish = async () => {
      throw new Error('publish failed');
    };
    const a = replica(failing, clock, 'a');
    await a.follower.observe('company', 200, { 'X-RateLimit-Limit': '9' });
    expect(a.book.keyLimit).toBe(9);
    await a.follower.shared();
    expect(a.seen.errors).toEqual([new Error('publish failed')]);
    expect(a.seen.changes).toBe(1);
  });

  it('a malformed broadcast is reported and changes nothing; after close nothing is heard', async () => {
    const { store, a } = setup();
    await flush();
    await store.publish(LIMITS_CHANNEL, 'not json');
    await flush();
    expect(a.seen.errors).toHaveLength(1);
    expect([a.book.keyLimit, a.seen.changes]).toEqual([60, 0]);

    await a.follower.close();
    await store.publish(LIMITS_CHANNEL, encodeLimitsChange('b', { keyLimit: 5 }));
    await flush();
    expect([a.book.keyLimit, a.seen.changes]).toEqual([60, 0]);
  });
});

describe("OwnSlots: this replica's own minute log", () => {
  it('keeps only the minute log remembered last, whichever minute it is', () => {
    const clock = new ManualClock();
    const book = new OwnSlots(
      classBook(new MemoryStore({ clock, cacheMaxBytes: 1 << 20 }), clock, 'a', () => {}),
    );
    const minute = (resetAtMs: number) => classSpec({ kind: 'minute', resetAtMs }, 60, 61_000);
    const key = classSpec({ kind: 'class', cls: 'key' }, 60, 60_000);
    const logs = () => [...book.logs.keys()].sort();
    const m1 = minute(clock.now() + 30_000);
    const m2 = minute(clock.now() + 90_000);
    book.remember(key, 'k1', clock.now());
    book.remember(m1, 'k1', clock.now());
    book.remember(m1, 'k2', clock.now());
    expect(logs()).toEqual(['key', m1.name].sort());
    expect(book.logs.get(m1.name)?.size).toBe(2);
    book.remember(m2, 'k3', clock.now());
    expect(logs()).toEqual(['key', m2.name].sort());
    // An older minute remembered again (an answer that came late) replaces the newer one, as before.
    book.remember(m1, 'k4', clock.now());
    expect(logs()).toEqual(['key', m1.name].sort());
    expect(book.logs.get(m1.name)?.size).toBe(1);
  });
});
