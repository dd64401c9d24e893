// A Store wrapper for fault injection (issue #10): the k-th role-method call (counted across every
// role, from 1; ping and close are not counted) throws StoreUnavailableError, either 'before' the
// call reaches the wrapped store (nothing applied) or 'after' it completed (applied, but the reply
// is lost, as when Redis dies between executing a script and answering). Run a scenario once to
// learn its call count, then once per k and mode. delay(method, ms) slows every call of a method.
import {
  ComposedStore,
  ROLE_METHODS,
  type RoleMethod,
  type Store,
  type StoreRoles,
  StoreUnavailableError,
} from '../../src/store/index.ts';

export type FailMode = 'before' | 'after';

export interface FaultRecord {
  call: number;
  method: RoleMethod;
  mode: FailMode;
}

export class FaultyStore extends ComposedStore {
  override readonly kind: Store['kind'];
  private count = 0;
  private readonly plan = new Map<number, FailMode>();
  private readonly methodPlan = new Map<string, FailMode>();
  private readonly perMethod = new Map<RoleMethod, number>();
  private readonly log: FaultRecord[] = [];
  private readonly trace: RoleMethod[] = [];
  private readonly delays = new Map<RoleMethod, number>();

  constructor(private readonly inner: Store) {
    const self = { wrap: (_m: RoleMethod, _args: unknown[]): Promise<unknown> => Promise.resolve() };
    const roles = {} as Record<keyof StoreRoles, Record<string, (...args: unknown[]) => Promise<unknown>>>;
    for (const role of Object.keys(ROLE_METHODS) as (keyof StoreRoles)[]) {
      roles[role] = {};
      for (const method of ROLE_METHODS[role]) roles[role][method] = (...args) => self.wrap(method, args);
    }
    super(roles as unknown as StoreRoles);
    self.wrap = (method, args) => this.call(method, args);
    this.kind = inner.kind;
  }

  /** Makes the k-th role-method call (1-based, counted from construction or reset()) fail. */
  failAt(k: number, mode: FailMode): this {
    if (!Number.isSafeInteger(k) || k < 1) throw new RangeError(`failAt: k must be >= 1, got ${k}`);
    this.plan.set(k, mode);
    return this;
  }

  /** Makes the nth call (1-based, from construction or reset()) of `method` fail. */
  failOn(method: RoleMethod, nth: number, mode: FailMode): this {
    this.methodPlan.set(`${method}#${nth}`, mode);
    return this;
  }

  /** Makes every call of `method` take `ms` longer (a slow store round trip), before it reaches the store. */
  delay(method: RoleMethod, ms: number): this {
    this.delays.set(method, ms);
    return this;
  }

  /** Role-method calls made so far. */
  get calls(): number {
    return this.count;
  }

  /** The methods called, in order (to see which call a k hits). */
  get methods(): readonly RoleMethod[] {
    return this.trace;
  }

  /** The faults injected so far. */
  get faults(): readonly FaultRecord[] {
    return this.log;
  }

  /** Forgets the count, the trace and any planned faults. */
  reset(): void {
    this.count = 0;
    this.plan.clear();
    this.methodPlan.clear();
    this.perMethod.clear();
    this.log.length = 0;
    this.trace.length = 0;
  }

  override ping(): Promise<void> {
    return this.inner.ping();
  }

  override close(): Promise<void> {
    return this.inner.close();
  }

  private async call(method: RoleMethod, args: unknown[]): Promise<unknown> {
    const n = ++this.count;
    this.trace.push(method);
    const m = (this.perMethod.get(method) ?? 0) + 1;
    this.perMethod.set(method, m);
    const mode = this.plan.get(n) ?? this.methodPlan.get(`${method}#${m}`);
    const fn = (this.inner as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[method]!;
    const delayMs = this.delays.get(method);
    if (delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (mode === 'before') {
      this.log.push({ call: n, method, mode });
      throw new StoreUnavailableError(`injected fault before call ${n} (${method})`);
    }
    const result = await fn.apply(this.inner, args);
    if (mode === 'after') {
      this.log.push({ call: n, method, mode });
      throw new StoreUnavailableError(`injected fault after call ${n} (${method}): applied, reply lost`);
    }
    return result;
  }
}
