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
//
// The same reading says whether apps COMPETE for a class, which is when pacing engages
// (class-book.ts): another app was refused it by the class itself or its pacing within the last
// window, and perhaps waits for it still ("search@crm:refused", one member per replica, kept one
// window after the last mark). A burst of one app, or of several apps that all get their starts,
// is not competition; nor is waiting for the upstream's minute cap.
import type { LimitClassState, SlotStore } from '../store/slot-store.ts';
import type { LimitClassName } from './limit-classes.ts';
import { type ClassSpec, classSpec, decodeStoreClass } from './store-class.ts';

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

/** What the last reading of one class said. */
interface Reading {
  at: number;
  /** Apps waiting for the class on some replica now. */
  apps: Set<string>;
  /** Apps that waited for it or were refused it within the last window. */
  refused: Set<string>;
}

/** A read of the waiting and refused logs to make, and how to apply its answer. */
export interface RefreshPlan {
  specs: ClassSpec[];
  apply(states: readonly (LimitClassState | undefined)[]): void;
}

export class FairShare {
  private readonly waiting = new Map<LimitClassName, Reading>();
  /** Waiting logs this replica is a member of, with when it last refreshed its entry. */
  private readonly registered = new Map<string, number>();
  /** Apps this replica has marked (read back with the known ones, configured or not). */
  private readonly marked = new Set<string>();

  constructor(private readonly o: FairShareOptions) {}

  private waitingSpec(c: LimitClassName, app: string): ClassSpec {
    return classSpec({ kind: 'waiting', cls: c, app }, NEVER_BINDING, this.o.windowOf(c));
  }

  private refusedSpec(c: LimitClassName, app: string): ClassSpec {
    return classSpec({ kind: 'refused', cls: c, app }, NEVER_BINDING, this.o.windowOf(c));
  }

  /** Re-reads who waits for these classes when the last reading is older than refreshMs. */
  async refresh(classes: LimitClassName[]): Promise<void> {
    const plan = this.refreshPlan(classes);
    if (!plan) return;
    plan.apply(await this.o.store.limiterState(plan.specs));
  }

  /**
   * The logs to read for these classes when the last reading is older than refreshMs (null when
   * it is fresh), so that a caller can read them in the same round trip as its own.
   */
  refreshPlan(classes: readonly LimitClassName[]): RefreshPlan | null {
    const now = this.o.now();
    const stale = classes.filter(
      (c) => now - (this.waiting.get(c)?.at ?? Number.NEGATIVE_INFINITY) >= this.o.refreshMs,
    );
    if (stale.length === 0) return null;
    const apps = [...new Set([...this.o.knownApps(), ...this.marked])];
    const specs: ClassSpec[] = [];
    for (const c of stale)
      for (const app of apps) specs.push(this.waitingSpec(c, app), this.refusedSpec(c, app));
    return {
      specs,
      apply: (states) => {
        let i = 0;
        for (const c of stale) {
          const waiting = new Set<string>();
          const refused = new Set<string>();
          for (const app of apps) {
            if ((states[i++]?.used ?? 0) > 0) waiting.add(app);
            if ((states[i++]?.used ?? 0) > 0) refused.add(app);
          }
          this.waiting.set(c, { at: now, apps: waiting, refused });
        }
      },
    };
  }

  /**
   * Whether, as last read, no app other than `app` waits for or competes for any of these classes
   * (its share is the whole class and nothing paces it for another app's sake).
   */
  alone(classes: readonly LimitClassName[], app: string): boolean {
    for (const c of classes) {
      const apps = this.waiting.get(c)?.apps;
      if (!apps || this.competing(c, app)) return false;
      for (const other of apps) if (other !== app) return false;
    }
    return true;
  }

  /**
   * Whether an app other than `app` competes for the class: it was refused it by the class or its
   * pacing (and perhaps waits for it still) within the window. Waiting for the upstream's minute
   * cap alone is not competing.
   */
  competing(c: LimitClassName, app: string): boolean {
    for (const other of this.waiting.get(c)?.refused ?? []) if (other !== app) return true;
    return false;
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

  /** Apps competing for a class (see competing), as last read. */
  competingApps(c: LimitClassName): string[] {
    return [...(this.waiting.get(c)?.refused ?? [])].sort();
  }

  /**
   * Says, for every replica to see, that this app waits here for the class, and, when `competes`
   * (the class itself or its pacing refused it, not the upstream's minute cap), that it competes
   * for it: the refused log keeps that for a window after the last mark.
   */
  async markWaiting(c: LimitClassName, app: string, competes = true): Promise<void> {
    const now = this.o.now();
    const r = this.waiting.get(c);
    const marks: ClassSpec[] = [];
    for (const spec of competes
      ? [this.waitingSpec(c, app), this.refusedSpec(c, app)]
      : [this.waitingSpec(c, app)]) {
      const last = this.registered.get(spec.name);
      if (last !== undefined && now - last < spec.windowMs / 2) continue;
      this.registered.set(spec.name, now);
      marks.push(spec);
    }
    if (marks.length === 0) return;
    this.marked.add(app);
    r?.apps.add(app);
    if (competes) r?.refused.add(app);
    await this.o.store.takeSlots(marks, this.o.instance);
  }

  /** This replica has no more waiters of the app for the class (it still competed lately). */
  async clearWaiting(c: LimitClassName, app: string): Promise<void> {
    const { name } = this.waitingSpec(c, app);
    if (!this.registered.delete(name)) return;
    await this.o.store.returnSlots([name], this.o.instance);
  }

  /**
   * The Store answers again after an outage: the marks this replica made meanwhile went to its
   * local log only; they are made again in the Store.
   */
  async remark(): Promise<void> {
    const now = this.o.now();
    const specs: ClassSpec[] = [];
    for (const name of this.registered.keys()) {
      const c = decodeStoreClass(name);
      if (c?.kind === 'waiting' || c?.kind === 'refused')
        specs.push(classSpec(c, NEVER_BINDING, this.o.windowOf(c.cls)));
      this.registered.set(name, now);
    }
    if (specs.length > 0) await this.o.store.takeSlots(specs, this.o.instance);
  }

  /** Leaves every waiting log (shutdown); the refused logs expire with their window. */
  async clearAll(): Promise<void> {
    const names = [...this.registered.keys()].filter((name) => decodeStoreClass(name)?.kind === 'waiting');
    this.registered.clear();
    await Promise.all(names.map((name) => this.o.store.returnSlots([name], this.o.instance)));
  }
}
