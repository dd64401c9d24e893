// The one field-name case (src/json-case.ts): camelCase identifiers become snake_case at any
// depth; keys that are data (app names, versions, hashes, `*global*`) and every value stay as
// they are; an answer already in snake_case is not copied; a camelCase body field is a 422
// naming the snake_case one.
import { describe, expect, it } from 'vitest';
import { snakeCaseKeys, snakeKey, unknownFields } from '../../src/json-case.ts';

describe('snakeKey', () => {
  it('turns camelCase identifiers into snake_case', () => {
    expect(snakeKey('limitMinor')).toBe('limit_minor');
    expect(snakeKey('upstreamMinuteCap')).toBe('upstream_minute_cap');
    expect(snakeKey('resetAtMs')).toBe('reset_at_ms');
    expect(snakeKey('upstreamURL')).toBe('upstream_url');
    expect(snakeKey('p95Ms')).toBe('p95_ms');
  });

  it('leaves every other key as it is', () => {
    for (const key of [
      'limit_minor',
      'p95',
      'crm',
      'demo-crm',
      '*global*',
      '0.1.0-RC1',
      'a1b2c3',
      'X-Cache',
      '',
    ])
      expect(snakeKey(key)).toBe(key);
  });
});

describe('snakeCaseKeys', () => {
  it('renames keys at any depth, in arrays too, and never a value', () => {
    const at = new Date(0);
    expect(
      snakeCaseKeys({
        timeZone: 'Europe/Moscow',
        budgets: { crm: [{ limitMinor: 5, updatedBy: 'fin', reason: 'limitMinor' }] },
        upstreamMinuteCap: null,
        at,
      }),
    ).toEqual({
      time_zone: 'Europe/Moscow',
      budgets: { crm: [{ limit_minor: 5, updated_by: 'fin', reason: 'limitMinor' }] },
      upstream_minute_cap: null,
      at,
    });
  });

  it('returns an answer already in snake_case itself, without copying it', () => {
    const answer = {
      count: 1,
      entries: [{ amount_minor: 5, before: { limit_minor: 1 } }],
      next_cursor: null,
    };
    expect(snakeCaseKeys(answer)).toBe(answer);
  });

  it('passes scalars, null and objects JSON writes its own way', () => {
    const buffer = Buffer.from('x');
    for (const v of [null, 0, 'a', true, buffer]) expect(snakeCaseKeys(v)).toBe(v);
  });
});

describe('unknownFields', () => {
  const known = ['limit_minor', 'soft_minor', 'reason'];

  it('names the snake_case field for a camelCase spelling', () => {
    expect(unknownFields({ limitMinor: 5, reason: 'r' }, known, 'budget')).toEqual([
      {
        field: 'limitMinor',
        code: 'unknown_field',
        message: 'limitMinor is not a budget field: field names are snake_case, send limit_minor',
      },
    ]);
  });

  it('refuses an unknown field and accepts the known ones', () => {
    expect(unknownFields({ limit_minor: 5, reason: 'r' }, known, 'budget')).toEqual([]);
    expect(unknownFields({ limit: 5 }, known, 'budget')).toEqual([
      { field: 'limit', code: 'unknown_field', message: 'limit is not a budget field' },
    ]);
  });
});
