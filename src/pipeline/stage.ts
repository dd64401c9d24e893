// A pipeline stage: `(ctx, next) => Promise<Outcome>`. It may answer by itself (a refusal, a
// cache hit), or call next() — once, several times (retries) or in a shared way (coalescing) —
// and act on what comes back. compose() runs a list of stages as one; the list itself lives in
// index.ts, so the order of the request lifecycle is written in one place.
import type { RequestContext } from './context.ts';
import type { PipelineDeps } from './deps.ts';
import type { Outcome } from './outcome.ts';

export type Next = () => Promise<Outcome>;
export type Stage = (ctx: RequestContext, next: Next) => Promise<Outcome>;
/**
 * A stage made from the dependencies it uses: each stage declares them as `D` (a Pick of
 * PipelineDeps), so its reach reads from its signature; the list in index.ts passes them all.
 */
export type StageFactory<D = PipelineDeps> = (deps: D) => Stage;

/** The stages as one function; the last stage's next() is a fault (the terminal stage must answer). */
export function compose(stages: readonly Stage[]): (ctx: RequestContext) => Promise<Outcome> {
  return (ctx) => {
    const run = (i: number): Promise<Outcome> => {
      const stage = stages[i];
      if (!stage) return Promise.reject(new Error('pipeline ended without an answer'));
      return stage(ctx, () => run(i + 1));
    };
    return run(0);
  };
}
