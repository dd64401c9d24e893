// WindowTracker.expiresText: the X-Window-Expires text every answer that names a window writes
// (the hit path, the cache, record and checks stages), with the clock injected.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { WindowTracker } from '../../src/cost/window-tracker.ts';

const store = {
  windows: async () => ({ dossierUntil: 0, requisitesUntil: 0 }),
  openWindow: async () => ({ dossierUntil: 0, requisitesUntil: 0 }),
  listWindows: async () => [],
};

describe('WindowTracker.expiresText', () => {
  const clock = new ManualClock();
  const start = clock.now();
  const windows = new WindowTracker({ store, clock, windowMs: 900_000, safetyMarginMs: 30_000 });
  const open = { dossierUntil: start + 600_000, requisitesUntil: start + 800_000 };

  it('is the end of the window that makes the read free, as ISO text, with no margin', () => {
    expect(windows.expiresText(open, 'dossier')).toBe(new Date(start + 600_000).toISOString());
    // A dossier window covers requisites too: the later of the two ends.
    expect(windows.expiresText(open, 'requisites')).toBe(new Date(start + 800_000).toISOString());
    expect(windows.expiresText(open, 'dossier')).toBe(new Date(start + 600_000).toISOString());
  });

  it('is undefined once that window has ended (inside the margin it is still named)', () => {
    clock.advance(590_000);
    expect(windows.expiresText(open, 'dossier')).toBe(new Date(start + 600_000).toISOString());
    clock.advance(10_000);
    expect(windows.expiresText(open, 'dossier')).toBeUndefined();
    expect(windows.expiresText(open, 'requisites')).toBe(new Date(start + 800_000).toISOString());
    expect(windows.expiresText({ dossierUntil: 0, requisitesUntil: 0 }, 'requisites')).toBeUndefined();
  });
});
