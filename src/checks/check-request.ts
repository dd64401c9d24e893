// A POST /v1/check as the check code sees it: which company, and what the check collects. The
// body is read once, by validation (domain/requests.ts checkCheckBody, through the route table's
// charge shape, ctx.shape.purpose); everything in checks/ that needs the purpose (the shared
// pending check, the cold-check class, the coalescing key) takes it from this value.
//
// Must never: read the request body again, or guess a purpose the validated body did not give.
import type { CheckPurpose } from '../domain/requests.ts';
import type { ChargeShape } from '../route-table.ts';

export type { CheckPurpose };

export interface CheckRequest {
  inn: string;
  purpose: CheckPurpose;
}

/** The check this call creates; null for any other call (or one not validated yet). */
export function checkRequestOf(ctx: {
  route: { name: string };
  shape: ChargeShape | null;
}): CheckRequest | null {
  const purpose = ctx.shape?.purpose;
  if (ctx.route.name !== 'check_create' || !ctx.shape || !purpose) return null;
  return { inn: ctx.shape.inn, purpose };
}
