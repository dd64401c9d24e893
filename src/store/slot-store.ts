// The slot role of the Store: the rate limiter's sliding-window logs, every class of one call
// taken atomically, and shared pauses (upstream 429 Retry-After). Also the same log in one process
// (LocalSlotLog, local-slot-log.ts): the memory backend's engine, and the rate governor's log while
// the shared Store cannot be reached. A log's sliding-window arithmetic is the backends' (the
// Redis Lua scripts, memory/memory-slots.ts), since the atomic take needs it; the limiter only says
// which logs a call takes, with what limit and window.
//
// Must never: grant a slot of one class and not the others, or shorten a pause.

export interface LimitClassSpec {
  /** Class name: "key", "search", "suggest", "check". */
  name: string;
  /** Calls allowed in any window of windowMs. */
  limit: number;
  windowMs: number;
}

export type TakeResult =
  | {
      ok: true;
      /**
       * Only when takeSlots was given `read`: the state of every class taken (this take counted)
       * and of every class in `read`, as they are right after the take, in one round trip.
       */
      states?: LimitClassState[];
    }
  | {
      ok: false;
      /** The class that refused. */
      name: string;
      /** When a slot of that class frees up (or its pause ends), from now. */
      retryAfterMs: number;
    };

export interface LimitClassState {
  name: string;
  /** Slots taken in the last windowMs. */
  used: number;
  /** ms until the class's pause ends; 0 when not paused. */
  pausedForMs: number;
}

export interface SlotStore {
  /**
   * Takes one slot of every class, or none. Redis uses the server's clock. When several classes
   * refuse, the answer names the one that frees up last. `id` should be unique per call: taking
   * again with an id that already holds a slot of a class refreshes that slot instead of adding one.
   * With `read` (classes to look at, not take), a granted take also answers the states of the
   * classes taken and read, as limiterState would right after it.
   */
  takeSlots(classes: LimitClassSpec[], id: string, read?: LimitClassSpec[]): Promise<TakeResult>;
  /** Gives back a slot taken by `id` (the call never left the gateway). */
  returnSlots(classNames: string[], id: string): Promise<void>;
  /**
   * Refuses the class for the next durationMs (upstream 429 Retry-After). Never shortens a longer
   * pause already in force; durationMs <= 0 changes nothing.
   */
  pauseClass(name: string, durationMs: number): Promise<void>;
  limiterState(classes: LimitClassSpec[]): Promise<LimitClassState[]>;
}

/**
 * The sliding-window log of one process, synchronous, on the clock it was made with: the same
 * decisions as the slot role's (takeSlots, returnSlots, pauseClass, limiterState), without I/O.
 */
export interface LocalSlotLog {
  /** Takes one slot of every class, or none (takeSlots without `read`). */
  take(classes: LimitClassSpec[], id: string): TakeResult;
  giveBack(classNames: string[], id: string): void;
  /** Refuses the class for the next durationMs; never shortens a longer pause. */
  pause(name: string, durationMs: number): void;
  state(classes: LimitClassSpec[]): LimitClassState[];
}
