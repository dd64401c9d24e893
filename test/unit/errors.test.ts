import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERRORS } from '../../src/errors.ts';

function readmeErrorTable(): Map<string, number> {
  const text = readFileSync('README.md', 'utf8');
  const section = text.slice(text.indexOf('### Errors'));
  const rows = new Map<string, number>();
  for (const match of section.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm))
    rows.set(match[1]!, Number(match[2]));
  return rows;
}

describe('error catalogue', () => {
  it('matches the README error table code for code and status for status', () => {
    const table = readmeErrorTable();
    const catalogue = new Map(Object.entries(ERRORS).map(([code, e]) => [code, e.status as number]));
    expect(table.size).toBeGreaterThan(0);
    expect(Object.fromEntries(table)).toEqual(Object.fromEntries(catalogue));
  });

  it('keeps the statuses the upstream spec gives', () => {
    expect(ERRORS.unauthorized.status).toBe(401);
    expect(ERRORS.feature_unavailable.status).toBe(403);
    expect(ERRORS.insufficient_funds.status).toBe(402);
    expect(ERRORS.quota_exceeded.status).toBe(429);
    expect(ERRORS.rate_limited.status).toBe(429);
    expect(ERRORS.validation_failed.status).toBe(422);
    expect(ERRORS.not_found.status).toBe(404);
    expect(ERRORS.idempotency_in_progress.status).toBe(409);
    expect(ERRORS.source_unavailable.status).toBe(502);
    expect(ERRORS.billing_unavailable.status).toBe(503);
  });
});
