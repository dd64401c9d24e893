// Request ids (src/ops/request-id.ts): UUID-shaped (version 8, variant 10), never repeated within
// a process, and not a plain count from zero.
import { describe, expect, it } from 'vitest';
import { nextRequestId } from '../../src/ops/request-id.ts';

describe('nextRequestId', () => {
  it('is a UUID of version 8 and variant 10, unique over many calls', () => {
    const seen = new Set<string>();
    const shape = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    let misshapen = 0;
    for (let i = 0; i < 100_000; i++) {
      const id = nextRequestId();
      if (!shape.test(id)) misshapen++;
      seen.add(id);
    }
    expect(misshapen).toBe(0);
    expect(seen.size).toBe(100_000);
  });

  it('does not count from zero', () => {
    const tail = nextRequestId().slice(24);
    expect(tail).not.toBe('000000000000');
  });
});
