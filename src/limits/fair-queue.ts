// The local waiting line of one limiter queue: start-time fair queueing across apps.
// Each app has a FIFO; a new entry gets the start tag max(virtual time, the app's last finish)
// and finishes 1/weight later; the entry with the smallest start tag is served next, after
// strict per-app priority. A backlogged app therefore gets service in proportion to its weight,
// and an app that sends rarely starts at the current virtual time, i.e. next in line, however
// long another app's backlog is.
//
// Pure and synchronous: no clock, no I/O, no timers. Must never decide when an entry may start
// (the governor asks the Store); it only decides who is next.

interface Entry<T> {
  item: T;
  start: number;
  finish: number;
  seq: number;
}

interface AppLine<T> {
  entries: Entry<T>[];
  lastFinish: number;
}

export interface FairQueueOptions {
  weightOf(app: string): number;
  priorityOf(app: string): number;
}

export class FairQueue<T extends { readonly app: string }> {
  private readonly lines = new Map<string, AppLine<T>>();
  private readonly where = new Map<T, Entry<T>>();
  private virtualTime = 0;
  private seq = 0;

  constructor(private readonly options: FairQueueOptions) {}

  get size(): number {
    return this.where.size;
  }

  push(item: T): void {
    let line = this.lines.get(item.app);
    if (!line) {
      line = { entries: [], lastFinish: 0 };
      this.lines.set(item.app, line);
    }
    const start = Math.max(this.virtualTime, line.lastFinish);
    const weight = Math.max(this.options.weightOf(item.app), 1e-6);
    const entry: Entry<T> = { item, start, finish: start + 1 / weight, seq: this.seq++ };
    line.entries.push(entry);
    line.lastFinish = entry.finish;
    this.where.set(item, entry);
  }

  /** The next item to serve among apps that `eligible` admits (all when omitted). */
  peek(eligible: (app: string) => boolean = () => true): T | undefined {
    let best: Entry<T> | undefined;
    let bestPriority = 0;
    for (const [app, line] of this.lines) {
      const head = line.entries[0];
      if (!head || !eligible(app)) continue;
      const priority = this.options.priorityOf(app);
      if (!best || this.before(head, priority, best, bestPriority)) {
        best = head;
        bestPriority = priority;
      }
    }
    return best?.item;
  }

  /** Removes an item that is being served; the line's virtual time moves to its start tag. */
  served(item: T): void {
    const entry = this.where.get(item);
    if (!entry) return;
    this.virtualTime = Math.max(this.virtualTime, entry.start);
    this.drop(item, entry, false);
  }

  /** Removes an item that leaves without service (deadline, abort); its app is not charged. */
  remove(item: T): boolean {
    const entry = this.where.get(item);
    if (!entry) return false;
    this.drop(item, entry, true);
    return true;
  }

  /** Every item in the order it would be served if nothing blocked anyone. */
  ordered(): T[] {
    const all: { entry: Entry<T>; priority: number }[] = [];
    for (const [app, line] of this.lines) {
      const priority = this.options.priorityOf(app);
      for (const entry of line.entries) all.push({ entry, priority });
    }
    all.sort((a, b) => (this.before(a.entry, a.priority, b.entry, b.priority) ? -1 : 1));
    return all.map((x) => x.entry.item);
  }

  /** Entries of the same app ahead of this one. */
  aheadInApp(item: T): number {
    const line = this.lines.get(item.app);
    const entry = this.where.get(item);
    return line && entry ? line.entries.indexOf(entry) : 0;
  }

  depthByApp(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [app, line] of this.lines) if (line.entries.length > 0) out[app] = line.entries.length;
    return out;
  }

  private before(a: Entry<T>, pa: number, b: Entry<T>, pb: number): boolean {
    if (pa !== pb) return pa > pb;
    if (a.start !== b.start) return a.start < b.start;
    return a.seq < b.seq;
  }

  private drop(item: T, entry: Entry<T>, unserved: boolean): void {
    this.where.delete(item);
    const line = this.lines.get(item.app);
    if (!line) return;
    const i = line.entries.indexOf(entry);
    if (i >= 0) line.entries.splice(i, 1);
    if (unserved) {
      // Give back the tag: the app's next entry starts where its remaining backlog ends.
      const last = line.entries[line.entries.length - 1];
      line.lastFinish = last ? last.finish : Math.min(line.lastFinish, this.virtualTime);
    }
    if (line.entries.length === 0 && line.lastFinish <= this.virtualTime) this.lines.delete(item.app);
  }
}
