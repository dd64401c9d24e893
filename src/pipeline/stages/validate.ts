// Stage: the upstream's own validation rules, applied locally so a bad input never costs an
// upstream call (nor a rate-limit slot, nor money), answered exactly as the upstream would:
// 422 validation_failed with details.fields, or 404 not_found for an unknown section or check.
// Once the request is known to be well formed, its derived facts are computed here, once: the
// charge shape, the cache policy and directives, the deadline and the per-attempt timeout.

import { cachePolicy } from '../../cache/cache-keys.ts';
import { parseCacheControl } from '../../cache/index.ts';
import { chargeShape } from '../../cost/estimate.ts';
import type { PipelineDeps } from '../deps.ts';
import { invalid, refuse } from '../refusals.ts';
import type { StageFactory } from '../stage.ts';

/** Longest accepted X-Max-Wait-Ms: beyond it a caller should not hold a connection open. */
export const MAX_WAIT_LIMIT_MS = 600_000;

/** What this stage uses of PipelineDeps. */
export type ValidateDeps = Pick<PipelineDeps, 'clock' | 'config' | 'limits'>;

export const validate: StageFactory<ValidateDeps> = (deps) => async (ctx, next) => {
  const verdict = ctx.route.validate(ctx.call);
  if (!verdict.ok)
    return verdict.kind === 'not_found'
      ? refuse('not_found', verdict.details ?? {}, verdict.message)
      : invalid(verdict.fields);
  const wait = maxWaitHeader(ctx.headers['x-max-wait-ms']);
  if (wait === 'invalid') {
    return invalid([
      {
        field: 'X-Max-Wait-Ms',
        code: 'invalid_value',
        message: `must be a whole number of milliseconds from 0 to ${MAX_WAIT_LIMIT_MS}`,
      },
    ]);
  }
  ctx.maxWaitMs = wait;
  ctx.shape = chargeShape(ctx.route.name, ctx.call);
  ctx.directives = parseCacheControl(ctx.headers['cache-control']);
  ctx.policy = cachePolicy(ctx.route.name, ctx.call.params, ctx.call.query);
  ctx.timeoutMs =
    ctx.route.timeout === 'check' ? deps.config.upstream.checkTimeoutMs : deps.config.upstream.timeoutMs;
  // The caller's whole allowance: the wait in the rate queue plus the upstream timeout.
  ctx.deadline = deps.clock.now() + ctx.timeoutMs + deps.limits.maxWaitFor(ctx.route.name, ctx.maxWaitMs);
  return next();
};

/** X-Max-Wait-Ms: milliseconds the caller will wait in the rate queue (0 = start now or refuse). */
function maxWaitHeader(value: string | string[] | undefined): number | undefined | 'invalid' {
  if (value === undefined) return undefined;
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw !== undefined && /^\d{1,9}$/.test(raw.trim()) && Number(raw) <= MAX_WAIT_LIMIT_MS)
    return Number(raw);
  return 'invalid';
}
