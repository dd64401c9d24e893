// Fairness between apps ACROSS replicas. The local fair queue orders one replica's waiters; when
// a freed slot is raced for by several replicas, that order alone cannot stop a flooding app
// (queued on every replica) from winning most races against an app that waits on one replica.
//
// So every take also takes the app's share class ("search@crm:share", a sliding log of that
// app's starts). Its limit is the whole class while no other app waits anywhere; while others
// wait, it is the app's weighted share: floor(limit * weight / (weight + their weights)), at
// least 1. An app over its share is refused for a moment and the slot goes to the one that
// waits. Who waits is a per-app log in the Store ("search@crm:waiting", one member per replica
// that has a waiter of that app, dropped when it has none, expiring after one window if the
// replica dies), read at most every refreshMs.
//
// The share is a scheduling hint on top of the class limit: it never lets a call start that the
// class would refuse (the class is in the same atomic take). Must never block an app that is
// alone in wanting the class.
import type { LimitClassName } from './limit-classes.ts';
import type { SlotStore } from './slot-fallback.ts';
import { type ClassSpec, classSpec } from './store-class.ts';

export interface FairShareOptions {
  store: SlotStore;
  now(): number;
  /** Replica id: this replica's member in the waiting logs. */
  instance: string;
  refreshMs: number;
  windowOf(c: LimitClassName): number;
  weightOf(app: string): number;
  /** Every app name this replica knows (configured ones first). */
  knownApps(): string[];
  onError(error: unknown): void;
}

const NEVER_BINDING = 1_000_000_000;

export class FairShare {
  private readonly waiting = new Map<LimitClassName, { at: number; apps: Set<string> }>();
  /** Waiting logs this replica is a member of, with when it last refreshed its entry. */
  private readonly registered = new Map<string, number>();

  constructor(private readonly o: FairShareOptions) {}

  private waitingSpec(c: LimitClassName, app: string): ClassSpec {
    return classSpec({ kind: 'waiting', cls: c, app }, NEVER_BINDING, this.o.windowOf(c));
  }

  /** Re-reads who waits for these classes when the last reading is older than refreshMs. */
  async refresh(classes: LimitClassName[]): Promise<void> {
    const now = this.o.now();
    const stale = classes.filter(
      (c) => now - (this.waiting.get(c)?.at ?? Number.NEGATIVE_INFINITY) >= this.o.refreshMs,
    );
    if (stale.length === 0) return;
    const apps = this.o.knownApps();
    const specs: ClassSpec[] = [];
    for (const c of stale) for (const app of apps) specs.push(this.waitingSpec(c, app));
    const states = specs.length > 0 ? await this.o.store.limiterState(specs) : [];
    let i = 0;
    for (const c of stale) {
      const waiting = new Set<string>();
      for (const app of apps) if ((states[i++]?.used ?? 0) > 0) waiting.add(app);
      this.waiting.set(c, { at: now, apps: waiting });
    }
  }

  /** The app's share class for this take (from the last reading of who waits). */
  spec(c: LimitClassName, app: string, classLimit: number): ClassSpec {
    let others = 0;
    for (const other of this.waiting.get(c)?.apps ?? []) if (other !== app) others += this.o.weightOf(other);
    const weight = this.o.weightOf(app);
    const limit =
      others === 0 ? NEVER_BINDING : Math.max(1, Math.floor((classLimit * weight) / (weight + others)));
    return classSpec({ kind: 'share', cls: c, app }, limit, this.o.windowOf(c));
  }

  /** Apps waiting for a class anywhere, as last read. */
  waitingApps(c: LimitClassName): string[] {
    return [...(this.waiting.get(c)?.apps ?? [])].sort();
  }

  /** Says, for every replica to see, that this app waits here for the class. */
  async markWaiting(c: LimitClassName, app: string): Promise<void> {
    const spec = this.waitingSpec(c, app);
    const now = this.o.now();
    const last = this.registered.get(spec.name);
    if (last !== undefined && now - last < spec.windowMs / 2) return;
    this.registered.set(spec.name, now);
    this.waiting.get(c)?.apps.add(app);
    await this.o.store.takeSlots([spec], this.o.instance);
  }

  /** This replica has no more waiters of the app for the class. */
  async clearWaiting(c: LimitClassName, app: string): Promise<void> {
    const { name } = this.waitingSpec(c, app);
    if (!this.registered.delete(name)) return;
    await this.o.store.returnSlots([name], this.o.instance);
  }

  /** Leaves every waiting log (shutdown). */
  async clearAll(): Promise<void> {
    const names = [...this.registered.keys()];
    this.registered.clear();
    await Promise.all(names.map((name) => this.o.store.returnSlots([name], this.o.instance)));
  }
}
