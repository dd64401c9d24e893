// The store-fault retry of a paid call's steps (cost/store-retry.ts) with this request's deadline
// and signal and the configured wait; each wait is logged once per request.
import { retryStoreFaults, type StoreRetryOptions } from '../cost/store-retry.ts';
import type { RequestContext } from './context.ts';
import type { PipelineDeps } from './deps.ts';

export { retryStoreFaults };

/** What the store-fault retry uses of PipelineDeps. */
export type StoreRetryDeps = Pick<PipelineDeps, 'clock' | 'random' | 'config' | 'logger'>;

export function storeRetry(ctx: RequestContext, deps: StoreRetryDeps): StoreRetryOptions {
  return {
    clock: deps.clock,
    random: deps.random,
    deadline: ctx.deadline,
    maxWaitMs: deps.config.store.failoverWaitMs,
    signal: ctx.signal,
    onRetry: (attempt, err) => {
      if (attempt === 1)
        deps.logger.warn(
          { requestId: ctx.requestId, err: err.message },
          'store fault on a paid call; waiting it out',
        );
    },
  };
}
