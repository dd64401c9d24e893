// Who says, for every replica to see, that it waits for which class (the waiting logs of
// fair-share.ts, which hold other apps to their share while it waits). An app counts as waiting
// for the class that holds it back, and only for that one:
// - refused by a class itself (its log, its pacing, the minute cap): every app waiting in the
//   line says it waits for that class, except one held back by its own share or cap;
// - refused by its own share: that app alone says so (by its own cap: nobody);
// - either way they leave the waiting logs of the line's other classes, unless another line of
//   theirs still wants them unblocked. A search held back by the search class or its own search
//   share cannot use a key slot, and its mark kept every other app to a share of a key class it
//   left unused (soak, six apps: the key class ran at 53-55 of 60 a minute, every other app
//   refused by its key share).
// An app joining a line others wait in says at once that it waits for what holds the line back,
// and an app that waits for a class in no line any more leaves its waiting log.
//
// Pure: the lines (their queues) and "now" are passed in, and the marks come back as steps in the
// order they are to be made. Must never write the Store (fair-share.ts makes the steps) or decide
// who is served.
import type { LimitClassName } from './limit-classes.ts';
import { baseClassOf, isAppClass, type StoreClass } from './store-class.ts';
import type { LineWaiter, WaitingLine } from './waiting-line.ts';

/** One mark to make: the app waits for the class (and competes for it), or no longer waits for it. */
export type WaitingStep =
  | { readonly mark: LimitClassName; readonly app: string; readonly competes: boolean }
  | { readonly clear: LimitClassName; readonly app: string };

/** What the marks read of a waiting line. */
export type MarkedLine = Pick<
  WaitingLine<LineWaiter>,
  'classes' | 'has' | 'isBlocked' | 'depthByApp' | 'lastRefusedBy'
>;

/** After a refusal of `app`'s take in `line` by `refusedBy`: who marks or clears what. */
export function marksAfterRefusal(
  lines: Iterable<MarkedLine>,
  line: MarkedLine,
  refusedBy: StoreClass,
  app: string,
  now: number,
): WaitingStep[] {
  const all = [...lines];
  if (isAppClass(refusedBy)) {
    // Waiting for its own share competes (fair-share.ts's default); its own cap marks nothing.
    const steps: WaitingStep[] =
      refusedBy.kind === 'share' ? [{ mark: refusedBy.cls, app, competes: true }] : [];
    return [...steps, ...leaveOtherClasses(all, line, app, refusedBy.cls, now)];
  }
  const c = baseClassOf(refusedBy);
  // Waiting for the upstream's minute cap is not competing for the class (it does not pace).
  const competes = refusedBy.kind !== 'minute';
  const steps: WaitingStep[] = [];
  for (const other of Object.keys(line.depthByApp())) {
    if (other !== app && line.isBlocked(other, now)) continue;
    steps.push({ mark: c, app: other, competes }, ...leaveOtherClasses(all, line, other, c, now));
  }
  return steps;
}

/** Joining a line others already wait in: the app says it waits for what holds the line back. */
export function marksOnJoin(line: MarkedLine, app: string): WaitingStep[] {
  const by = line.lastRefusedBy;
  return by && !isAppClass(by) ? [{ mark: baseClassOf(by), app, competes: by.kind !== 'minute' }] : [];
}

/** A waiter of `app` for `classes` left: the classes it waits for in no line any more. */
export function marksAfterLeave(
  lines: Iterable<MarkedLine>,
  classes: readonly LimitClassName[],
  app: string,
): WaitingStep[] {
  const all = [...lines];
  const steps: WaitingStep[] = [];
  for (const c of classes)
    if (!all.some((l) => l.classes.includes(c) && l.has(app))) steps.push({ clear: c, app });
  return steps;
}

/** The app is held back in `line` by `held`: it leaves the waiting logs of the line's other classes it wants nowhere else. */
function leaveOtherClasses(
  lines: readonly MarkedLine[],
  line: MarkedLine,
  app: string,
  held: LimitClassName,
  now: number,
): WaitingStep[] {
  const steps: WaitingStep[] = [];
  for (const c of line.classes) {
    if (c === held) continue;
    const still = lines.some(
      (other) => other !== line && other.classes.includes(c) && other.has(app) && !other.isBlocked(app, now),
    );
    if (!still) steps.push({ clear: c, app });
  }
  return steps;
}
