// Request coalescing: identical safe requests in flight share one upstream call. In one
// process through a map of promises; across replicas through a Store lock plus the leader's
// answer parked briefly as a Store blob (state role: never counted as cache bytes), under the
// leader's own id, for followers on other replicas that saw that leader (a GET's answer only
// when such a follower said it waits: parkOnDemand). GETs and check creations are coalesced;
// bodies are capped so a huge answer is never parked. An error answer is shared with the
// waiters too (they would only repeat the failure). A follower on another replica is woken by
// the bus (COALESCE_CHANNEL) when its leader has parked or released, and polls only as a
// fallback (a bus message is a hint: one lost while a subscriber reconnects costs a poll).
//
// Must never: let a follower read an answer parked by a call it did not wait for, or depend on a
// bus message arriving (the fallback poll decides when it does not).
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { copyWith } from '../object-copy.ts';
import type { BusStore } from '../store/bus-store.ts';
import type { StateStore } from '../store/store.ts';
import { keepAlive } from './lease.ts';

export interface SharedAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export interface CoalesceResult<T> {
  /** The leader's outcome (in-process), or its parked answer (another replica's leader). */
  answer: T | SharedAnswer;
  /** true for followers: they did not make the call. */
  follower: boolean;
}

export interface CoalescerOptions {
  store: StateStore;
  clock: Clock;
  /** Answers larger than this are not parked for other replicas. */
  maxParkBytes?: number;
  /** A follower's look for its leader's answer, without a bus (default 20 ms). */
  pollMs?: number;
  /** Wakes followers on other replicas when a leader parks or releases (Redis pub/sub). */
  bus?: BusStore;
  /** A follower's fallback look when the bus wakes it (default 200 ms). */
  busFallbackMs?: number;
  /** Share across replicas through the Store (Redis); in-process only otherwise. */
  distributed: boolean;
  /** The cross-replica lead's lease, renewed while the leader's call runs. */
  leaseMs?: number;
}

/** How long a leader's answer stays readable by followers that were waiting for it. */
const PARK_MS = 2_000;

/** Bus channel: a message is a coalescing key whose leader has parked its answer or released its lead. */
export const COALESCE_CHANNEL = 'coalesce:done';

const parkedKey = (key: string, leader: string) => `coalesce:answer:${key}:${leader}`;
/** Set by a follower that waits for `leader`'s answer (parkOnDemand). */
const wantedKey = (key: string, leader: string) => `coalesce:wanted:${key}:${leader}`;

/** A wait that ends when `wake` is called. */
function armed(): { woken: Promise<void>; wake: () => void } {
  let wake!: () => void;
  const woken = new Promise<void>((resolve) => {
    wake = resolve;
  });
  return { woken, wake };
}

function encode(a: SharedAnswer): Buffer {
  const meta = Buffer.from(JSON.stringify({ s: a.status, h: a.headers }));
  const len = Buffer.alloc(4);
  len.writeUInt32BE(meta.length);
  return Buffer.concat([len, meta, a.body]);
}

function decode(b: Buffer): SharedAnswer {
  const n = b.readUInt32BE(0);
  const meta = JSON.parse(b.subarray(4, 4 + n).toString()) as { s: number; h: Record<string, string> };
  return { status: meta.s, headers: meta.h, body: b.subarray(4 + n) };
}

export class Coalescer {
  private readonly inflight = new Map<string, Promise<unknown>>();
  /** Leads whose answer is being parked and lock released. */
  private readonly handOvers = new Set<Promise<void>>();
  /** Per key, resolved once this process's last lead has sent the lock's release (until then it holds it). */
  private readonly releasing = new Map<string, Promise<void>>();
  private readonly pollMs: number;
  private readonly maxParkBytes: number;
  /** Per key, the wake of this process's followers waiting on another replica's leader. */
  private readonly wakes = new Map<string, { woken: Promise<void>; wake: () => void; waiting: number }>();
  /** The bus subscription (null until it answered, or without a bus). */
  private listening: Promise<(() => Promise<void>) | null> | null = null;

  constructor(private readonly options: CoalescerOptions) {
    const bus = options.distributed ? options.bus : undefined;
    this.pollMs = bus ? (options.busFallbackMs ?? 200) : (options.pollMs ?? 20);
    this.maxParkBytes = options.maxParkBytes ?? 2_000_000;
    if (bus) this.listening = bus.subscribe(COALESCE_CHANNEL, (key) => this.wake(key)).catch(() => null);
  }

  /** Stops listening to the bus (shutdown). */
  async close(): Promise<void> {
    const unsubscribe = await this.listening;
    this.listening = null;
    await unsubscribe?.().catch(() => {});
  }

  /** Tells other replicas' followers of `key` to look now (a hint; they poll without it). */
  private announce(key: string): void {
    if (this.listening) void this.options.bus?.publish(COALESCE_CHANNEL, key).catch(() => {});
  }

  /** Wakes this process's followers of `key` (a bus message): their current wait ends. */
  private wake(key: string): void {
    const entry = this.wakes.get(key);
    if (!entry) return;
    const { wake } = entry;
    Object.assign(entry, armed());
    wake();
  }

  /** Registers a follower of `key`: `next(ms)` resolves at the next wake or after `ms`. */
  private follow(key: string): { next(ms: number): Promise<void>; done(): void } {
    let entry = this.wakes.get(key);
    if (!entry) {
      entry = copyWith(armed(), { waiting: 0 });
      this.wakes.set(key, entry);
    }
    entry.waiting++;
    const mine = entry;
    return {
      next: (ms) => Promise.race([mine.woken, this.options.clock.sleep(ms)]),
      done: () => {
        if (--mine.waiting === 0 && this.wakes.get(key) === mine) this.wakes.delete(key);
      },
    };
  }

  /**
   * Runs `call` once for every caller of the same key in flight. `parkable` picks what other
   * replicas may read of the leader's outcome (an answer; never a refusal meant for one app).
   * `options.notLed` tells an outcome that stopped before sending because the lead it was
   * given resolved false (another replica leads): this caller then follows that replica.
   */
  async run<T>(
    key: string,
    deadline: number,
    call: (lead: Promise<boolean> | null) => Promise<T>,
    parkable: (outcome: T) => SharedAnswer | null,
    options: { early?: boolean; parkOnDemand?: boolean; notLed?: (outcome: T) => boolean } = {},
  ): Promise<CoalesceResult<T>> {
    const onDemand = options.parkOnDemand === true;
    // A lead of this process that has answered but not yet released the lock (its hand-over
    // runs a turn or two after the answer) would make this request find the lock taken and take
    // the follower's way: its first steps given back and done again once the lock is free, ~5
    // store round trips more (seen on half of back-to-back reads of one key, the pass-through
    // bench's case). Waiting for that release here costs one or two round trips instead.
    for (let waited: Promise<void> | undefined; ; ) {
      const local = this.inflight.get(key) as Promise<T> | undefined;
      if (local) return { answer: await local, follower: true };
      const releasing = this.releasing.get(key);
      if (!releasing || releasing === waited) break;
      waited = releasing;
      await releasing;
    }
    let resolveShared!: (a: T | SharedAnswer) => void;
    let rejectShared!: (e: unknown) => void;
    const shared = new Promise<T | SharedAnswer>((res, rej) => {
      resolveShared = res;
      rejectShared = rej;
    });
    shared.catch(() => {});
    this.inflight.set(key, shared);
    try {
      let owner: string | null = null;
      if (this.options.distributed && options.early) {
        // The lock is asked for without waiting: `call` waits for it only before the call is
        // sent (its rate slot is taken meanwhile, and given back if another replica leads).
        const early = await this.leadEarly(key, call, parkable, onDemand, options.notLed);
        if ('answer' in early) {
          resolveShared(early.answer);
          return { answer: early.answer, follower: false };
        }
      }
      if (this.options.distributed) {
        // The store down: coalesce in this process only (the charge gate still guards money).
        const remote = await this.followRemote(key, deadline).catch(() => ({ owner: null }));
        if ('answer' in remote) {
          resolveShared(remote.answer);
          return { answer: remote.answer, follower: true };
        }
        owner = remote.owner;
      }
      const answer = await this.lead(key, owner, () => call(null), parkable, onDemand);
      resolveShared(answer);
      return { answer, follower: false };
    } catch (err) {
      rejectShared(err);
      throw err;
    } finally {
      this.inflight.delete(key);
    }
  }

  /**
   * Leads with the cross-replica lock asked for alongside the call's own first steps (a free
   * read: nothing before its rate slot costs anything). The answer when this replica led (or the
   * store could not be reached: in-process only); `{ follow: true }` when the lock was taken by
   * another replica and `call` stopped before sending (`notLed`): the caller follows it.
   */
  private async leadEarly<T>(
    key: string,
    call: (lead: Promise<boolean> | null) => Promise<T>,
    parkable: (outcome: T) => SharedAnswer | null,
    onDemand: boolean,
    notLed: ((outcome: T) => boolean) | undefined,
  ): Promise<{ answer: T } | { follow: true }> {
    const { store, clock } = this.options;
    const leaseMs = this.options.leaseMs ?? 10_000;
    const owner = randomUUID();
    const lock = `coalesce:lock:${key}`;
    let lease = null as { stop(): void } | null;
    const locked = store.acquireLock(lock, owner, leaseMs).then(
      (ok) => {
        if (ok)
          lease = keepAlive(clock, Math.max(1, Math.floor(leaseMs / 3)), () =>
            store.renewLock(lock, owner, leaseMs),
          );
        return ok;
      },
      () => null, // the store down: coalesce in this process only
    );
    let answer: T;
    try {
      answer = await call(locked.then((ok) => ok !== false));
    } catch (err) {
      const ok = await locked;
      lease?.stop();
      if (ok) {
        await store.releaseLock(lock, owner).catch(() => {});
        this.announce(key);
      }
      throw err;
    }
    const ok = await locked;
    if (ok === false && notLed?.(answer)) return { follow: true };
    if (ok !== true) return { answer };
    this.handOver(key, owner, answer, parkable, lease, onDemand);
    return { answer };
  }

  private async lead<T>(
    key: string,
    owner: string | null,
    call: () => Promise<T>,
    parkable: (outcome: T) => SharedAnswer | null,
    onDemand: boolean,
  ): Promise<T> {
    if (owner === null) return call();
    const { store, clock } = this.options;
    const leaseMs = this.options.leaseMs ?? 10_000;
    // The lead is a short lease renewed while the call runs: a leader that dies frees it soon.
    const lease = keepAlive(clock, Math.max(1, Math.floor(leaseMs / 3)), () =>
      store.renewLock(`coalesce:lock:${key}`, owner, leaseMs),
    );
    let answer: T;
    try {
      answer = await call();
    } catch (err) {
      lease.stop();
      await store.releaseLock(`coalesce:lock:${key}`, owner).catch(() => {});
      this.announce(key);
      throw err;
    }
    this.handOver(key, owner, answer, parkable, lease, onDemand);
    return answer;
  }

  /**
   * The answer is parked for other replicas' followers and the lead released, off the answer's
   * path; the lock stays held until the answer is parked, so a follower never finds neither.
   * `onDemand`: parked only when a follower said it waits for this leader (wantedKey), which
   * spares the store a copy of nearly every answer (a 109 KB write per dossier read). A follower
   * that says so after the look finds the lock free and no answer: it then leads a call itself,
   * as a request arriving just after this one would.
   */
  private handOver<T>(
    key: string,
    owner: string,
    answer: T,
    parkable: (outcome: T) => SharedAnswer | null,
    lease: { stop(): void } | null,
    onDemand: boolean,
  ): void {
    const { store } = this.options;
    const parked = parkable(answer);
    // Resolved once the release is sent: a later command on the same key (this process's next
    // lead asking for the lock) goes out on the same connection after it, so Redis frees the lock
    // first; waiting for the release's reply would only add a round trip.
    let sent!: () => void;
    const releaseSent = new Promise<void>((resolve) => {
      sent = resolve;
    });
    const released = () => {
      if (this.releasing.get(key) === releaseSent) this.releasing.delete(key);
      sent();
    };
    const handOver = (async () => {
      // From the next turn of the event loop, once this client's answer is written: even a
      // store command not waited for costs the answer its socket write (the lock is held a turn
      // longer: a request arriving meanwhile follows this answer, parked for it on demand).
      await new Promise<void>((resolve) => setImmediate(resolve));
      // A store that cannot say whether anyone waits: parked (the safe side).
      const wanted = async () =>
        !onDemand ||
        store.get(wantedKey(key, owner)).then(
          (v) => v !== null,
          () => true,
        );
      const small = parked !== null && parked.body.length <= this.maxParkBytes;
      // Followers are told when one said it waits, or when none can find an answer (they then
      // take the lock); an answer parked for nobody is announced to nobody.
      const tell = small ? await wanted() : true;
      let announced = false;
      if (small && tell) {
        // Stored: its followers are told at once, not after the release's reply (a parked
        // answer is theirs whoever holds the lock by then; one round trip off the follower).
        announced = await store.putBlob(parkedKey(key, owner), encode(parked), PARK_MS).then(
          () => true,
          () => false,
        );
      }
      lease?.stop();
      const release = store.releaseLock(`coalesce:lock:${key}`, owner);
      released();
      if (announced) this.announce(key);
      await release.catch(() => {});
      // Nothing parked (none wanted, too large, or the blob not stored): followers look for the
      // lock, so they are told once it is free.
      if (tell && !announced) this.announce(key);
    })().finally(() => {
      released();
      this.handOvers.delete(handOver);
    });
    this.handOvers.add(handOver);
    this.releasing.set(key, releaseSent);
  }

  /** Resolves when every finished lead has parked its answer and released its lock (shutdown, tests). */
  async idle(): Promise<void> {
    await Promise.all([...this.handOvers]);
  }

  /**
   * Takes the cross-replica lead (the lock is held until the answer is parked), or waits for
   * the replica that has it and returns its answer. A parked answer is only ever read by
   * callers that found the lock taken by its leader, i.e. arrived while its call was in flight
   * (answers are parked under the leader's id, so an older call's answer is never ours).
   */
  private async followRemote(
    key: string,
    deadline: number,
  ): Promise<{ owner: string | null } | { answer: SharedAnswer }> {
    const owner = randomUUID();
    const lock = `coalesce:lock:${key}`;
    const ttl = () => this.options.leaseMs ?? 10_000;
    // Listening before the first look: a leader finishing between the look and the wait still wakes us.
    const waiter = this.follow(key);
    try {
      return await this.followOrLead(key, deadline, owner, lock, ttl, waiter);
    } finally {
      waiter.done();
    }
  }

  private async followOrLead(
    key: string,
    deadline: number,
    owner: string,
    lock: string,
    ttl: () => number,
    waiter: { next(ms: number): Promise<void> },
  ): Promise<{ owner: string | null } | { answer: SharedAnswer }> {
    const { store, clock } = this.options;
    if (await store.acquireLock(lock, owner, ttl())) return { owner };
    // Someone was in flight when we arrived: its parked answer, once there, is ours. Look for
    // it before trying the lock again, so the leader's release does not make us call twice.
    let leader = await store.get(lock);
    // Every leader told, not only the last: one seen holding the lock for a moment may be a
    // follower like us (its look after taking it), which parks nothing.
    const told = new Set<string>();
    for (;;) {
      // Tell the leader someone waits (it parks its answer only then, on demand).
      if (leader && !told.has(leader)) {
        await store.set(wantedKey(key, leader), '1', ttl());
        told.add(leader);
      }
      await waiter.next(this.pollMs);
      const parked = leader ? await store.getBlob(parkedKey(key, leader)) : null;
      if (parked) return { answer: decode(parked) };
      if (await store.acquireLock(lock, owner, ttl())) {
        // The look and this try are two commands: the leader may have parked its answer and
        // released the lock between them (seen under CPU load). It parks before it releases, so
        // a look made now, holding the lock, finds that answer: ours, and the lock given back.
        const late = await this.parkedBy(key, told);
        if (late === null) return { owner };
        await store.releaseLock(lock, owner).catch(() => {});
        return { answer: late };
      }
      leader = (await store.get(lock)) ?? leader;
      if (clock.now() >= deadline) return { owner: null };
    }
  }

  /** The answer one of `leaders` parked; null when none did (or the store cannot say). */
  private async parkedBy(key: string, leaders: Iterable<string>): Promise<SharedAnswer | null> {
    for (const leader of leaders) {
      const parked = await this.options.store.getBlob(parkedKey(key, leader)).catch(() => null);
      if (parked) return decode(parked);
    }
    return null;
  }
}
