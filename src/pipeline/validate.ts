// Stage: the upstream's own validation rules, applied locally so a bad input never costs an
// upstream call (nor a rate-limit slot, nor money). Answers exactly as the upstream would:
// 422 validation_failed with details.fields, or 404 not_found for an unknown section or check.
import { ApiError } from '../errors.ts';
import type { IncomingCall, UpstreamRoute } from '../upstream-routes.ts';

export function validate(route: UpstreamRoute, call: IncomingCall): void {
  const verdict = route.validate(call);
  if (verdict.ok) return;
  if (verdict.kind === 'not_found') throw new ApiError('not_found');
  throw ApiError.validation(verdict.fields);
}

/** Parses a JSON request body; `undefined` when absent or not JSON (validation then reports it). */
export function parseJsonBody(raw: Buffer | undefined): unknown {
  if (!raw || raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return undefined;
  }
}
