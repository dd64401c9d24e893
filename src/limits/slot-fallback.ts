// The governor's only door to the Store's slot logs (the slot role, store/slot-store.ts), and what
// it does when the Store cannot be reached: it falls back to conservative LOCAL rate shares,
// enforced in this process by the store's own local log (store/local-slot-log.ts: the memory
// store's sliding window, at most the local limit of a class in any interval of its window, on
// this replica), and goes back to the shared logs as soon as the Store answers again (a ping every
// probeMs while local, so within about probeMs of its return). The window maths is the store's:
// this module only picks the log and the limit.
//
// Local limits (localShareOf): a class, its pacing, an app's cap and the upstream-minute cap get
// floor(limit / expectedReplicas) (a class may set its own `localLimit`); share, waiting and
// refused logs are hints between replicas and keep theirs. On entering local mode this replica's
// own slots still in a window are copied into the local log, so a switch does not start a fresh
// window.
//
// What is given back while local is given back to the Store too when it answers again (before
// the shared logs are used), so a waiting mark cleared meanwhile does not linger there.
//
// Must never: grant a slot without a take (shared or local), let one Store fault refuse every
// request, or report a mode change more than once per change.
import type { Clock } from '../clock.ts';
import type { BusStore } from '../store/bus-store.ts';
import { type LocalSlotLog, localSlotLog } from '../store/local-slot-log.ts';
import type { LimitClassSpec, LimitClassState, SlotStore, TakeResult } from '../store/slot-store.ts';
import type { Store } from '../store/store.ts';
import type { LimitClassConfig, LimitClassName } from './limit-classes.ts';
import { decodeStoreClass, isHintClass } from './store-class.ts';

export type { SlotStore } from '../store/slot-store.ts';

/** Everything the governor uses of a Store: the slot role, the bus role, and ping (outage probe). */
export type GovernorStore = SlotStore & BusStore & Partial<Pick<Store, 'ping'>>;

/** A slot log that can say which limit is in force for a spec now (local shares while local). */
export interface GovernedSlots extends SlotStore {
  limitOf?(spec: LimitClassSpec): number;
}

/** One slot this replica holds in a shared log (copied into the local log on entering it). */
export interface OwnSlot {
  spec: LimitClassSpec;
  id: string;
  at: number;
}

export interface SlotFallbackOptions {
  store: SlotStore & Partial<Pick<Store, 'ping'>>;
  clock: Clock;
  classes: Record<LimitClassName, LimitClassConfig>;
  /** Default local share: limit / expectedReplicas. Default 2. */
  expectedReplicas?: number;
  /** How often the Store is probed while local. Default 250 ms. */
  probeMs?: number;
  /** This replica's slots still in a shared window. */
  ownSlots(): Iterable<OwnSlot>;
  /** Entered (with the fault) or left local mode. */
  onModeChange(local: boolean, cause?: unknown): void;
}

/** Give-backs remembered while the Store is unreachable, at most (each expires with its window). */
const MAX_OWED = 10_000;

/** The local limit of a store class while the Store is unreachable (pure). */
export function localShareOf(
  spec: LimitClassSpec,
  classes: Record<LimitClassName, LimitClassConfig>,
  expectedReplicas: number,
): number {
  const c = decodeStoreClass(spec.name);
  if (!c || isHintClass(c)) return spec.limit;
  const share = Math.floor(spec.limit / expectedReplicas);
  if (c.kind === 'pace') return Math.min(spec.limit, Math.max(1, share));
  if (c.kind === 'class') {
    const configured = classes[c.cls].localLimit;
    return configured === undefined ? share : Math.min(configured, spec.limit);
  }
  return share;
}

export class SlotFallback implements GovernedSlots {
  private readonly store: SlotFallbackOptions['store'];
  private readonly replicas: number;
  private readonly probeMs: number;
  /** The local log; its clock can be set back to copy own slots in at their original times. */
  private readonly local: LocalSlotLog;
  private backdateTo: number | null = null;
  /**
   * Slots given back while local (per id, the log names): the Store may still hold them (a
   * waiting mark would keep telling the other replicas an app waits); given back there on return.
   */
  private readonly owed = new Map<string, Set<string>>();
  private probing = new AbortController();
  private closed = false;
  private localMode = false;

  constructor(private readonly o: SlotFallbackOptions) {
    this.store = o.store;
    this.replicas = Math.max(1, o.expectedReplicas ?? 2);
    this.probeMs = o.probeMs ?? 250;
    this.local = localSlotLog(() => this.backdateTo ?? o.clock.now());
  }

  /** true while the Store is unreachable and the local shares are in force. */
  get isLocal(): boolean {
    return this.localMode;
  }

  limitOf(spec: LimitClassSpec): number {
    return this.localMode ? localShareOf(spec, this.o.classes, this.replicas) : spec.limit;
  }

  async takeSlots(specs: LimitClassSpec[], id: string, read?: LimitClassSpec[]): Promise<TakeResult> {
    if (!this.localMode) {
      try {
        return await this.store.takeSlots(specs, id, read);
      } catch (error) {
        this.enterLocal(error);
      }
    }
    const local = this.localSpecs(specs);
    const result = this.local.take(local, id);
    if (!result.ok || !read) return result;
    return { ok: true, states: this.local.state([...local, ...this.localSpecs(read)]) };
  }

  async returnSlots(names: string[], id: string): Promise<void> {
    this.local.giveBack(names, id);
    if (!this.localMode) {
      try {
        await this.store.returnSlots(names, id);
        return;
      } catch (error) {
        this.enterLocal(error);
      }
    }
    this.owe(names, id);
  }

  async pauseClass(name: string, durationMs: number): Promise<void> {
    if (durationMs > 0) this.local.pause(name, durationMs);
    if (this.localMode) return;
    await this.store.pauseClass(name, durationMs).catch((error: unknown) => this.enterLocal(error));
  }

  async limiterState(specs: LimitClassSpec[]): Promise<LimitClassState[]> {
    if (!this.localMode) {
      try {
        return await this.store.limiterState(specs);
      } catch (error) {
        this.enterLocal(error);
      }
    }
    return this.local.state(this.localSpecs(specs));
  }

  /** Stops probing. */
  close(): void {
    this.closed = true;
    this.probing.abort();
  }

  private localSpecs(specs: LimitClassSpec[]): LimitClassSpec[] {
    return specs.map((s) => ({ name: s.name, windowMs: s.windowMs, limit: this.limitOf(s) }));
  }

  private enterLocal(cause: unknown): void {
    if (this.localMode || this.closed) return;
    for (const { spec, id, at } of this.o.ownSlots()) {
      this.backdateTo = at;
      this.local.take([{ name: spec.name, limit: Number.MAX_SAFE_INTEGER, windowMs: spec.windowMs }], id);
    }
    this.backdateTo = null;
    this.localMode = true;
    this.o.onModeChange(true, cause);
    void this.probe();
  }

  /** While local: ping the Store every probeMs; the first answer ends local mode. */
  private async probe(): Promise<void> {
    this.probing = new AbortController();
    const signal = this.probing.signal;
    while (this.localMode && !this.closed) {
      await this.o.clock.sleep(this.probeMs, signal);
      if (this.closed) return;
      try {
        if (this.store.ping) await this.store.ping();
        else await this.store.limiterState([]);
        await this.settle();
      } catch {
        continue;
      }
      this.localMode = false;
      this.o.onModeChange(false);
    }
  }

  /** Remembers a give-back the Store did not get (bounded: the oldest are dropped; they expire). */
  private owe(names: string[], id: string): void {
    let set = this.owed.get(id);
    if (!set) {
      if (this.owed.size >= MAX_OWED) {
        const oldest = this.owed.keys().next().value;
        if (oldest !== undefined) this.owed.delete(oldest);
      }
      set = new Set();
      this.owed.set(id, set);
    }
    for (const name of names) set.add(name);
  }

  /** Gives the Store what was given back while it could not be reached; throws if it fails again. */
  private async settle(): Promise<void> {
    for (const [id, names] of this.owed) {
      await this.store.returnSlots([...names], id);
      this.owed.delete(id);
    }
  }
}
