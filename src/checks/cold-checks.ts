// Which POST /v1/check calls can start a cold check, the only ones the upstream's "two cold
// fresh checks a minute" counts (docs/rate-limits.md "Cold checks"). Used by the upstreamCall
// stage to spend the `check` rate class only where it must (and by a check's completion, which
// records its data fresh: rememberFresh):
// - before the call, a check known NOT to be cold skips the class (never waits in its queue):
//   a replay of an Idempotency-Key the upstream already answered 2xx (it replays, or refuses a
//   different body with idempotency_key_reused), or a company and purpose whose check data was
//   seen ready (found) within the freshness the gateway assumes (the coverage window, less the
//   safety margin: the spec does not show the upstream's freshness; the emulator's default);
// - after the call, an answer that shows no cold check started gives the class's slot back:
//   anything but 200/202 (refused before any check was created), or a replay
//   (`Idempotent-Replayed: true`).
// Must never: skip or refund the `key` class (every call spends it), or call a check warm from a
// dossier read (only a finished check makes the upstream's data fresh).
import type { Clock } from '../clock.ts';
import type { GatewayConfig } from '../config/schema.ts';
import type { LimitClassName } from '../limits/index.ts';
import type { RequestContext } from '../pipeline/context.ts';
import type { StateStore } from '../store/store.ts';
import type { UpstreamResponse } from '../upstream/upstream-client.ts';
import { type CheckRequest, checkRequestOf } from './check-request.ts';

const KEY_TTL_MS = 86_400_000; // the spec: an Idempotency-Key lives one day
const CHECK: LimitClassName[] = ['check'];

const keyName = (idempotencyKey: string) => `check-answered:${idempotencyKey}`;
const warmName = (inn: string, purpose: string) => `check-warm:${inn}:${purpose}`;

/** What these functions read of a request and of the gateway: no more. */
type Call = Pick<RequestContext, 'route' | 'shape' | 'idempotencyKey' | 'startedAt'>;
export interface ColdCheckDeps {
  store: Pick<StateStore, 'get' | 'set'>;
  clock: Clock;
  config: Pick<GatewayConfig, 'cost'>;
}

/** The classes a check_create call may skip before it is sent (empty for every other route). */
export async function knownNotCold(ctx: Call, deps: ColdCheckDeps): Promise<LimitClassName[]> {
  const check = checkRequestOf(ctx);
  if (!check) return [];
  const [answered, warmUntil] = await Promise.all([
    ctx.idempotencyKey ? deps.store.get(keyName(ctx.idempotencyKey)) : Promise.resolve(null),
    deps.store.get(warmName(check.inn, check.purpose)),
  ]);
  if (answered !== null) return CHECK;
  if (warmUntil !== null && Number(warmUntil) > deps.clock.now()) return CHECK;
  return [];
}

/** The classes the answer shows were not spent upstream (pure). */
export function unspentBy(
  route: string,
  res: Pick<UpstreamResponse, 'status' | 'headers'>,
): LimitClassName[] {
  if (route !== 'check_create') return [];
  if (res.status !== 200 && res.status !== 202) return CHECK;
  return res.headers['idempotent-replayed'] === 'true' ? CHECK : [];
}

/**
 * Remembers what a creation's answer teaches about later checks: the key is answered, and a 200
 * that found the company is a check finished at once (its data is fresh from the call's start).
 * A check finished later is remembered by its completion (check-completion.ts), whoever saw it.
 */
export async function learnFromAnswer(
  ctx: Call,
  deps: ColdCheckDeps,
  res: Pick<UpstreamResponse, 'status' | 'body'>,
): Promise<void> {
  if (ctx.route.name !== 'check_create') return;
  const writes: Promise<void>[] = [];
  if (ctx.idempotencyKey && (res.status === 200 || res.status === 202))
    writes.push(deps.store.set(keyName(ctx.idempotencyKey), '1', KEY_TTL_MS));
  const check = checkRequestOf(ctx);
  if (res.status === 200 && check && ctx.startedAt !== undefined && foundIn(res.body))
    writes.push(rememberFresh(deps, check, ctx.startedAt));
  await Promise.all(writes);
}

/**
 * A check of this company and purpose found data ready at `readyFrom`: checks of it are not cold
 * while the gateway assumes that data fresh (the window less the margin, from `readyFrom`).
 */
export async function rememberFresh(
  deps: ColdCheckDeps,
  check: CheckRequest,
  readyFrom: number,
): Promise<void> {
  const cost = deps.config.cost;
  const until = readyFrom + (cost.windowSeconds - cost.safetyMarginSeconds) * 1000;
  const ttl = until - deps.clock.now();
  if (ttl <= 0) return;
  await Promise.all([
    deps.store.set(warmName(check.inn, check.purpose), String(until), ttl),
    // A dossier check also makes the company's requisites fresh (the upstream's rule).
    ...(check.purpose === 'dossier'
      ? [deps.store.set(warmName(check.inn, 'requisites'), String(until), ttl)]
      : []),
  ]);
}

/**
 * true when a check's 200 body says the registers found the company: only then is it fresh (not
 * cold) and does the upstream open a window (found: false opens none: the emulator's registry).
 */
export function foundIn(body: Buffer): boolean {
  try {
    return (JSON.parse(body.toString('utf8')) as { found?: unknown }).found === true;
  } catch {
    return false;
  }
}
