// A scan of the spend ledger (src/cost/spend-ledger.ts batches: the CSV export, the JSON pages,
// statements, reconciliation) gives the event loop a turn between its batches. On a store that
// answers without I/O (memory, the embedded SQLite) a scan of a long range otherwise ran in one
// turn while every other request waited: 1.3 s for a CSV of 200,000 entries
// (bench/ledger-export.ts, eventLoopDelayMs).
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { SpendLedger } from '../../src/cost/spend-ledger.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { turnCounter } from '../helpers/turns.ts';

const clock = new ManualClock(1_700_000_000_000);

async function ledgerOf(entries: number): Promise<SpendLedger> {
  const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20, ledgerMaxRecords: entries + 10 });
  for (let i = 0; i < entries; i++)
    await store.appendLedger({
      at: 1_699_000_000_000 + i,
      app: 'alpha',
      operation: 'company',
      kind: 'dossier',
      inn: '7707083893',
      amountMinor: 100 + i,
    });
  return new SpendLedger(store);
}

describe('a spend ledger scan and the event loop', () => {
  it('takes a turn of the event loop between batches', async () => {
    const ledger = await ledgerOf(2_000);
    const counter = turnCounter();
    let batches = 0;
    let entries = 0;
    let turnsAtFirst = -1;
    for await (const b of ledger.batches(0, Number.MAX_SAFE_INTEGER)) {
      if (batches === 0) turnsAtFirst = counter.turns();
      batches++;
      entries += b.entries.length;
    }
    const turns = counter.turns() - turnsAtFirst;
    counter.stop();
    expect(entries).toBe(2_000);
    expect(batches).toBeGreaterThanOrEqual(4);
    // Other work ran between every two batches, not only after the whole scan.
    expect(turns).toBeGreaterThanOrEqual(batches - 1);
  });

  it('a page larger than a batch is read in turns too, and is still every entry once', async () => {
    const ledger = await ledgerOf(3_000);
    const counter = turnCounter();
    const first = await ledger.page(0, Number.MAX_SAFE_INTEGER, { limit: 2_000 });
    const turns = counter.turns();
    const rest = await ledger.page(0, Number.MAX_SAFE_INTEGER, { limit: 2_000, afterId: first.lastId });
    counter.stop();
    expect(first.entries).toHaveLength(2_000);
    expect(first.complete).toBe(false);
    expect(rest.entries).toHaveLength(1_000);
    expect(rest.complete).toBe(true);
    const ids = [...first.entries, ...rest.entries].map((e) => e.id);
    expect(new Set(ids).size).toBe(3_000);
    expect(turns).toBeGreaterThanOrEqual(3);
  });
});
