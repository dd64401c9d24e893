// The waiting marks on their own (waiting-marks.ts): an app says it waits only for the class that
// holds it back, and leaves the waiting logs of the line's other classes unless another line of
// its still wants them; its own share marks it alone, its own cap nobody, the minute cap marks
// without competing; joining and leaving a line.
import { describe, expect, it } from 'vitest';
import type { LimitClassName } from '../../src/limits/limit-classes.ts';
import type { StoreClass } from '../../src/limits/store-class.ts';
import { WaitingLine } from '../../src/limits/waiting-line.ts';
import { marksAfterLeave, marksAfterRefusal, marksOnJoin } from '../../src/limits/waiting-marks.ts';

const NOW = 1_000;
const order = { weightOf: () => 1, priorityOf: () => 0 };

function line(classes: LimitClassName[], ...apps: string[]) {
  const l = new WaitingLine<{ app: string; deadline: number }>(classes, order);
  for (const app of apps) l.push({ app, deadline: NOW + 10_000 });
  return l;
}

describe('waiting marks', () => {
  it('a refusal by a class marks every app of the line for it and clears the line’s other classes', () => {
    const searches = line(['search', 'key'], 'crm', 'erp');
    const steps = marksAfterRefusal([searches], searches, { kind: 'class', cls: 'search' }, 'crm', NOW);
    expect(steps).toEqual([
      { mark: 'search', app: 'crm', competes: true },
      { clear: 'key', app: 'crm' },
      { mark: 'search', app: 'erp', competes: true },
      { clear: 'key', app: 'erp' },
    ]);
  });

  it('keeps the key mark of an app that also waits, unblocked, in the key line', () => {
    const searches = line(['search', 'key'], 'crm');
    const reads = line(['key'], 'crm');
    const steps = marksAfterRefusal([reads, searches], searches, { kind: 'pace', cls: 'search' }, 'crm', NOW);
    expect(steps).toEqual([{ mark: 'search', app: 'crm', competes: true }]);
  });

  it('skips an app blocked by its own share or cap, but not the refused app itself', () => {
    const searches = line(['search', 'key'], 'crm', 'erp');
    const share: StoreClass = { kind: 'share', cls: 'search', app: 'erp' };
    searches.refused('erp', { cls: share, name: 'search@erp:share', retryAfterMs: 50 }, NOW);
    const steps = marksAfterRefusal([searches], searches, { kind: 'class', cls: 'search' }, 'crm', NOW);
    expect(steps).toEqual([
      { mark: 'search', app: 'crm', competes: true },
      { clear: 'key', app: 'crm' },
    ]);
  });

  it('its own share marks that app alone; its own cap marks nobody; both clear its other classes', () => {
    const searches = line(['search', 'key'], 'crm', 'erp');
    const share: StoreClass = { kind: 'share', cls: 'search', app: 'crm' };
    const cap: StoreClass = { kind: 'cap', cls: 'search', app: 'crm' };
    expect(marksAfterRefusal([searches], searches, share, 'crm', NOW)).toEqual([
      { mark: 'search', app: 'crm', competes: true },
      { clear: 'key', app: 'crm' },
    ]);
    expect(marksAfterRefusal([searches], searches, cap, 'crm', NOW)).toEqual([{ clear: 'key', app: 'crm' }]);
  });

  it('the upstream-minute cap marks the key without competing for it', () => {
    const reads = line(['key'], 'crm');
    const minute: StoreClass = { kind: 'minute', resetAtMs: 60_000 };
    expect(marksAfterRefusal([reads], reads, minute, 'crm', NOW)).toEqual([
      { mark: 'key', app: 'crm', competes: false },
    ]);
  });

  it('joining marks what last held the line back (a class, not an app’s own cap)', () => {
    const reads = line(['key'], 'crm');
    expect(marksOnJoin(reads, 'erp')).toEqual([]);
    reads.lastRefusedBy = { kind: 'minute', resetAtMs: 60_000 };
    expect(marksOnJoin(reads, 'erp')).toEqual([{ mark: 'key', app: 'erp', competes: false }]);
    reads.lastRefusedBy = { kind: 'class', cls: 'key' };
    expect(marksOnJoin(reads, 'erp')).toEqual([{ mark: 'key', app: 'erp', competes: true }]);
    reads.lastRefusedBy = { kind: 'cap', cls: 'key', app: 'crm' };
    expect(marksOnJoin(reads, 'erp')).toEqual([]);
  });

  it('leaving clears only the classes the app waits for in no line', () => {
    const searches = line(['search', 'key'], 'erp');
    const reads = line(['key'], 'crm');
    expect(marksAfterLeave([searches, reads], ['search', 'key'], 'crm')).toEqual([
      { clear: 'search', app: 'crm' },
    ]);
  });
});
