// The slot log in one process (LocalSlotLog, slot-store.ts) for a caller outside the store: the
// rate governor keeps one while the shared Store cannot be reached (limits/slot-fallback.ts), so
// its local shares are enforced by the same sliding-window code as the memory store's slot role.
//
// Must never: read Date.now() (time comes from `now`), or be shared between processes.
import { MemorySlots } from './memory/memory-slots.ts';
import type { LocalSlotLog } from './slot-store.ts';

export type { LocalSlotLog } from './slot-store.ts';

/** A sliding-window log in this process, on the clock `now`. */
export function localSlotLog(now: () => number): LocalSlotLog {
  return new MemorySlots({ now });
}
