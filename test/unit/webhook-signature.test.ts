// Webhook signatures on their own (api-spec "Events"): the spec's example scheme, rotation with
// two secrets and two v1 values, the 300 s tolerance both ways, malformed headers.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  parseSignatureHeader,
  signatureHeader,
  verifySignature,
} from '../../src/checks/webhook-signature.ts';

const body = Buffer.from('{"id":"e1","event":"check.completed"}');
const now = 1_800_000_000_000;
const t = now / 1000;
const hmac = (secret: string, ts: number) =>
  createHmac('sha256', secret).update(`${ts}.${body.toString()}`).digest('hex');

describe('webhook signatures', () => {
  it('accepts HMAC-SHA256 over "<t>.<raw body>", computed independently', () => {
    const header = `t=${t},v1=${hmac('s1', t)}`;
    expect(verifySignature({ header, body, secrets: ['s1'], nowMs: now })).toEqual({
      ok: true,
      timestamp: t,
    });
  });

  it('rotation: any v1 under any secret matches', () => {
    const header = signatureHeader(['old', 'new'], t, body);
    expect(verifySignature({ header, body, secrets: ['new'], nowMs: now }).ok).toBe(true);
    expect(verifySignature({ header, body, secrets: ['old', 'other'], nowMs: now }).ok).toBe(true);
    expect(verifySignature({ header, body, secrets: ['other'], nowMs: now })).toEqual({
      ok: false,
      reason: 'mismatch',
    });
  });

  it('a changed body or secret is a mismatch', () => {
    const header = signatureHeader(['s1'], t, body);
    expect(verifySignature({ header, body: Buffer.from(`${body} `), secrets: ['s1'], nowMs: now }).ok).toBe(
      false,
    );
    expect(verifySignature({ header, body, secrets: ['s2'], nowMs: now }).ok).toBe(false);
  });

  it('the tolerance holds in both directions: 300 s accepted, 301 s refused', () => {
    for (const skew of [-300, 300]) {
      const header = signatureHeader(['s1'], t + skew, body);
      expect(verifySignature({ header, body, secrets: ['s1'], nowMs: now }).ok, String(skew)).toBe(true);
    }
    for (const skew of [-301, 301, -400, 400]) {
      const header = signatureHeader(['s1'], t + skew, body);
      expect(verifySignature({ header, body, secrets: ['s1'], nowMs: now }), String(skew)).toEqual({
        ok: false,
        reason: 'stale',
      });
    }
  });

  it('malformed headers and a gateway without secrets refuse', () => {
    for (const header of [undefined, '', 'v1=abc', `t=${t}`, `t=x,v1=${hmac('s1', t)}`, `t=${t},v1=nothex`]) {
      expect(verifySignature({ header, body, secrets: ['s1'], nowMs: now }).ok, String(header)).toBe(false);
    }
    const header = signatureHeader(['s1'], t, body);
    expect(verifySignature({ header, body, secrets: [], nowMs: now })).toEqual({
      ok: false,
      reason: 'no_secret',
    });
    expect(parseSignatureHeader(`t=${t}, v1=${hmac('s1', t).toUpperCase()}`)?.signatures).toEqual([
      hmac('s1', t),
    ]);
  });
});
