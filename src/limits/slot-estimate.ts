// When will a waiting request get its slot? Answers "the (ahead+1)-th slot of this class
// becomes free in X ms" from what the limiter knows: the class's limit, window, pause and how
// many slots the shared log holds, plus the exact times of the slots this replica took itself.
// Slots other replicas took are assumed spread evenly over the window (they are, under steady
// demand). With one replica (memory store) the answer is exact.
//
// Pure arithmetic: no clock (times are "ms from now"), no I/O. Must never be used to grant a
// slot: only the Store's atomic take does that; this only decides whether waiting can succeed.

export interface ClassView {
  limit: number;
  windowMs: number;
  /** Slots in the shared log now. */
  used: number;
  pausedForMs: number;
  /** This replica's own slots in the log: ms from now until each leaves the window. */
  ownExpiriesMs: number[];
}

/** ms from now until the slot for a request with `ahead` requests before it is free. */
export function startEstimateMs(view: ClassView, ahead: number): number {
  const { limit, windowMs, used, pausedForMs } = view;
  if (limit <= 0) return Number.POSITIVE_INFINITY;
  const own = view.ownExpiriesMs
    .map((ms) => Math.min(Math.max(ms, 0), windowMs))
    .sort((a, b) => a - b)
    .slice(-Math.max(used, 0));
  const foreign = Math.max(0, used - own.length);
  const expiries = [...own];
  for (let i = 0; i < foreign; i++) expiries.push(((i + 0.5) * windowMs) / foreign);
  expiries.sort((a, b) => a - b);

  // The first `limit` times a slot is available: free slots now, then expiries; a log holding
  // more than `limit` (the limit was lowered) frees nothing until it is back under the limit.
  // That list is `free` zeros followed by the expiries (or, over the limit, the expiries
  // without their first `-free`); it is indexed, never built, so its cost does not grow with
  // the limit (an upstream may announce 100 000 000 a minute).
  const free = limit - used;
  const availableAt = (i: number) => (i < free ? 0 : (expiries[i - free] ?? 0));
  // Each availability repeats one window later (the slot is taken then frees again).
  const k = Math.max(ahead, 0);
  const at = availableAt(k % limit) + Math.floor(k / limit) * windowMs;
  return Math.max(at, pausedForMs);
}
