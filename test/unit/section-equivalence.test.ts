// Section-from-dossier equivalence on its own (issue #14): comparison of a section's answer
// with the dossier member (key order ignored, pages), evidence counts and the verdicts.
import { describe, expect, it } from 'vitest';
import {
  addEvidence,
  compareSection,
  derivableMember,
  firstDifference,
  mayDerive,
  NO_COUNTS,
  verdictName,
} from '../../src/cache/section-equivalence.ts';

describe('section equivalence', () => {
  it('equal answers are equal whatever the key order', () => {
    expect(compareSection({ a: 1, b: [{ x: 1, y: 2 }] }, { b: [{ y: 2, x: 1 }], a: 1 })).toEqual({
      kind: 'equal',
    });
  });

  it('names the first difference', () => {
    expect(firstDifference({ a: [1, 2] }, { a: [1, 3] }, '')).toBe('$.a[1] (value)');
    expect(firstDifference({ a: [1] }, { a: [1, 2] }, '')).toBe('$.a (length 1 vs 2)');
    expect(firstDifference([1], { 0: 1 }, '')).toBe('$ (array vs object)');
    const differs = compareSection({ items: [], cursor: '' }, [{ x: 1 }]);
    expect(differs.kind).toBe('differs');
  });

  it('an absent member differs; a first page with more pages is only partial, never derivable', () => {
    expect(compareSection({ a: 1 }, undefined).kind).toBe('differs');
    const page = { items: [{ n: 1 }], cursor: 'next' };
    expect(compareSection(page, page)).toEqual({ kind: 'partial' });
    expect(derivableMember({ arbitration: page }, 'arbitration')).toBeUndefined();
    const last = { items: [{ n: 1 }], cursor: '' };
    expect(derivableMember({ arbitration: last }, 'arbitration')).toEqual(last);
    expect(derivableMember({}, 'arbitration')).toBeUndefined();
  });

  it('learns: derivable after learnAfter equal comparisons, never after one difference', () => {
    let counts = NO_COUNTS;
    expect(mayDerive('learn', counts, 2)).toBe(false);
    counts = addEvidence(counts, { kind: 'equal' });
    expect(verdictName('learn', counts, 2)).toBe('learning');
    counts = addEvidence(counts, { kind: 'equal' });
    expect(mayDerive('learn', counts, 2)).toBe(true);
    expect(verdictName('learn', counts, 2)).toBe('equivalent');
    counts = addEvidence(counts, { kind: 'differs', reason: 'first' });
    counts = addEvidence(counts, { kind: 'differs', reason: 'second' });
    expect(mayDerive('learn', counts, 2)).toBe(false);
    expect(counts.reason).toBe('first');
    expect(verdictName('learn', counts, 2)).toBe('different');
  });

  it('an operator pin wins over the evidence', () => {
    const differs = addEvidence(NO_COUNTS, { kind: 'differs', reason: 'x' });
    expect(mayDerive('on', differs, 1)).toBe(true);
    expect(mayDerive('off', { equal: 9, partial: 0, differs: 0 }, 1)).toBe(false);
    expect(verdictName('off', NO_COUNTS, 1)).toBe('pinned_off');
  });
});
