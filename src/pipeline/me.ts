// GET /v1/me through the gateway: answered from the gateway's own copy of the upstream's
// account record (refreshed in the background), plus a `gateway` object telling the app who
// it is to the gateway: its name, scopes and budgets (limit, spent, remaining per period).
import type { FastifyReply } from 'fastify';
import type { RequestContext } from './context.ts';
import type { PipelineDeps } from './deps.ts';
import { execute } from './execute.ts';
import { respond } from './respond.ts';

export async function answerMe(
  ctx: RequestContext,
  reply: FastifyReply,
  deps: PipelineDeps,
): Promise<FastifyReply> {
  let { me } = deps.prices.snapshot();
  if (!me) {
    await deps.prices.refresh();
    me = deps.prices.snapshot().me;
  }
  if (!me) return respond(ctx, reply, await execute(ctx, deps), deps);
  const app = ctx.app!;
  const budgets = (await deps.budgets.status(app.name)).map((b) => ({
    scope: b.scope,
    period: b.period,
    period_id: b.periodId,
    limit_minor: b.limitMinor,
    soft_minor: b.softMinor,
    spent_minor: b.spentMinor,
    reserved_minor: b.reservedMinor,
    remaining_minor: b.remainingMinor,
  }));
  ctx.cache = 'HIT';
  return reply
    .code(200)
    .header('content-type', 'application/json; charset=utf-8')
    .header(
      'age',
      String(Math.max(0, Math.floor((deps.clock.now() - deps.prices.snapshot().refreshedAt) / 1000))),
    )
    .send({
      ...me,
      gateway: { app: app.name, scopes: app.scopes, time_zone: deps.config.cost.timeZone, budgets },
    });
}
