// Webhook signatures (api-spec "Events"): `X-Service-Signature: t=<unix seconds>,v1=<hex>`,
// HMAC-SHA256 of `<t>.<raw body>` with the webhook secret; several `v1` values during rotation.
// Pure functions: verification of what the upstream sends to the gateway and signing of what
// the gateway sends to apps (the same scheme, each app's own secret).
//
// Must never: compare a signature with ===, accept a timestamp further than the tolerance from
// now in either direction, or accept a header without a v1 value.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_TOLERANCE_SECONDS = 300;

export interface ParsedSignature {
  timestamp: number;
  signatures: string[];
}

/** `t=...,v1=...[,v1=...]` → its parts; null when malformed (no t, no v1, t not an integer). */
export function parseSignatureHeader(header: string | undefined): ParsedSignature | null {
  if (!header || header.length > 4096) return null;
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (name === 't') {
      if (!/^\d{1,12}$/.test(value)) return null;
      timestamp = Number(value);
    } else if (name === 'v1' && /^[0-9a-f]{64}$/i.test(value)) {
      signatures.push(value.toLowerCase());
    }
  }
  return timestamp === null || signatures.length === 0 ? null : { timestamp, signatures };
}

export function signatureOf(secret: string, timestamp: number, body: Buffer | string): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

/** The header value signed with each secret (two during a rotation). */
export function signatureHeader(
  secrets: readonly string[],
  timestamp: number,
  body: Buffer | string,
): string {
  return [`t=${timestamp}`, ...secrets.map((s) => `v1=${signatureOf(s, timestamp, body)}`)].join(',');
}

export type Verification =
  | { ok: true; timestamp: number }
  | { ok: false; reason: 'malformed' | 'stale' | 'mismatch' | 'no_secret' };

/**
 * Accepts when any v1 equals the HMAC under any of the secrets (constant-time compare of equal
 * lengths) and the timestamp is within `toleranceSeconds` of `nowMs` in either direction.
 */
export function verifySignature(input: {
  header: string | undefined;
  body: Buffer;
  secrets: readonly string[];
  nowMs: number;
  toleranceSeconds?: number;
}): Verification {
  if (input.secrets.length === 0) return { ok: false, reason: 'no_secret' };
  const parsed = parseSignatureHeader(input.header);
  if (!parsed) return { ok: false, reason: 'malformed' };
  const tolerance = input.toleranceSeconds ?? SIGNATURE_TOLERANCE_SECONDS;
  if (Math.abs(input.nowMs / 1000 - parsed.timestamp) > tolerance) return { ok: false, reason: 'stale' };
  let match = false;
  for (const secret of input.secrets) {
    const expected = Buffer.from(signatureOf(secret, parsed.timestamp, input.body), 'hex');
    for (const candidate of parsed.signatures) {
      // Every pair is compared (no early exit): the time taken does not say which one matched.
      if (timingSafeEqual(expected, Buffer.from(candidate, 'hex'))) match = true;
    }
  }
  return match ? { ok: true, timestamp: parsed.timestamp } : { ok: false, reason: 'mismatch' };
}
