// What a call must have before the upstream stage sends it. Three stages above it start a wait
// that the send depends on: the coalesce stage asks whether this replica leads the call, the
// cache stage whether the store's windows agree with the ones this replica guessed, the budget
// stage opens the charge entry. Each is asked for alongside the rate slot (one wait, not three
// in a row), so none of them can be awaited where it starts: the stage registers it here, the
// upstream stage hands the whole set to the governed call, and when one says no nothing is
// sent and the outcome is Unsent with that condition's reason, for its stage to act on.
// The conditions and the order they are judged in are declared in index.ts, beside the stages.
//
// Must never: let a call go out before every registered condition said yes, or hide which one
// said no (the first false in the declared order decides; a later one is not awaited).
import type { UnsentWhy } from './outcome.ts';

export type SendCondition = 'lead' | 'windows' | 'charge';

/** What each condition's "no" means to the stage that owns it. */
const WHY: Record<SendCondition, UnsentWhy> = {
  lead: 'not_leader',
  windows: 'windows_disagree',
  charge: 'charge_not_opened',
};

export class SendConditions {
  private readonly waits = new Map<SendCondition, Promise<boolean>>();

  constructor(private readonly order: readonly SendCondition[]) {}

  /** The stage that owns `condition` starts its wait (a rejection counts as no). */
  set(condition: SendCondition, ok: Promise<boolean>): void {
    this.waits.set(
      condition,
      ok.then(
        (v) => v === true,
        () => false,
      ),
    );
  }

  /** A condition's own wait, for the stage that set it (undefined when it set none). */
  get(condition: SendCondition): Promise<boolean> | undefined {
    return this.waits.get(condition);
  }

  /** Forgets one condition's wait (its stage goes on without it: a lead now held). */
  delete(condition: SendCondition): void {
    this.waits.delete(condition);
  }

  /** Forgets every wait (a stage that starts the stages below it over). */
  clear(): void {
    this.waits.clear();
  }

  /** Whether there is anything to wait for. */
  get empty(): boolean {
    return this.waits.size === 0;
  }

  /** Resolves false as soon as one condition is false, true once all are (the rate queue's early leave). */
  allMet(): Promise<boolean> {
    const waits = [...this.waits.values()];
    if (waits.length === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      let left = waits.length;
      for (const w of waits)
        void w.then((ok) => {
          if (!ok) resolve(false);
          else if (--left === 0) resolve(true);
        });
    });
  }

  /** Why the call may not be sent: the first condition in the declared order that said no; null when all said yes. */
  async unmet(): Promise<UnsentWhy | null> {
    for (const condition of this.order) {
      const wait = this.waits.get(condition);
      if (wait && !(await wait)) return WHY[condition];
    }
    return null;
  }
}
