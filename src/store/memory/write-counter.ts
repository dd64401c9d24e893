// Expired memory-store state is dropped lazily on read and by a full sweep every this many
// writes, across every role, so memory stays bounded without timers.
//
// Must never: sweep on a timer (the store must not keep the process alive or read real time).

const SWEEP_EVERY_WRITES = 1024;

export interface Sweepable {
  sweep(): void;
}

export class WriteCounter {
  private writes = 0;
  private readonly parts: Sweepable[] = [];

  add(part: Sweepable): void {
    this.parts.push(part);
  }

  wrote(): void {
    if (++this.writes % SWEEP_EVERY_WRITES !== 0) return;
    for (const part of this.parts) part.sweep();
  }
}
