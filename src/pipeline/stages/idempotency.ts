// Stage: the Idempotency-Key a charged call carries upstream (DESIGN.md "Idempotency keys").
// A client key is namespaced per app (two apps using the same key never collide); with no
// client key the gateway makes one for this logical request. Either way the key belongs to one
// logical request: its retries and its reconciliation reuse it, and nothing else ever does, so
// the upstream never replays an answer older than the caller accepts (no time buckets).
import { namespacedKey, requestKey } from '../../cost/idempotency-keys.ts';
import type { StageFactory } from '../stage.ts';

export const idempotency: StageFactory = () => async (ctx, next) => {
  if (ctx.shape === null || ctx.app === null) return next();
  ctx.idempotencyKey =
    ctx.call.idempotencyKey !== undefined
      ? namespacedKey(ctx.app.name, ctx.call.idempotencyKey)
      : requestKey(ctx.requestId);
  return next();
};
