// The embedded default store (memory hot roles + the money roles in <stateDir>/money.db) against
// the shared contract, with the manual clock (the SQLite roles take the injected clock, so timing
// is exact), plus what only it promises: money survives closing and reopening the file, one
// process owns a state directory, a lock or a SQLite lock directory left by a killed process is
// taken over, and a schema newer than the code is refused.
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { type PendingCharge, StoreUnavailableError } from '../../src/store/index.ts';
import { EmbeddedStore } from '../../src/store/sqlite/embedded-store.ts';
import { MoneyDb, SCHEMA_VERSION } from '../../src/store/sqlite/sqlite-db.ts';
import { LOCK_FILE } from '../../src/store/sqlite/state-lock.ts';
import { runStoreContract } from './contract-harness.ts';

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'cpgw-sqlite-'));
  dirs.push(dir);
  return dir;
};

runStoreContract('embedded (memory hot roles + SQLite money roles)', async () => {
  const clock = new ManualClock();
  const dir = tempDir();
  const store = new EmbeddedStore({ clock, cacheMaxBytes: 10 * 1024 * 1024, stateDir: dir });
  return {
    store,
    pass: async (ms) => clock.advance(ms),
    exactTime: true,
    clock,
    close: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('EmbeddedStore only', () => {
  let dir: string;
  let clock: ManualClock;
  const open = () => new EmbeddedStore({ clock, cacheMaxBytes: 1024 * 1024, stateDir: dir });
  beforeEach(() => {
    dir = tempDir();
    clock = new ManualClock(Date.UTC(2026, 0, 15, 9));
  });
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  const pending = (key: string): PendingCharge => ({
    key,
    requestId: `req-${key}`,
    app: 'crm',
    operation: 'company',
    kind: 'dossier',
    inn: '7707083893',
    estimateMinor: 9900,
    at: clock.now(),
    method: 'GET',
    target: '/v1/company/7707083893',
    body: null,
    opens: 'dossier',
    counters: ['day'],
    counterTtlMs: 86_400_000,
    owner: 'r1',
    leaseUntil: clock.now() + 30_000,
    reconcileAttempts: 0,
  });

  it('keeps the ledger, spend, holds, claims, pending entries and windows across a close and reopen', async () => {
    const first = open();
    const day = [{ key: 'day', limitMinor: 30_000, ttlMs: 86_400_000 }];
    await first.openCharge(pending('paid'), day);
    await first.recordCharge({
      key: 'paid',
      amountMinor: 9900,
      entry: { at: clock.now(), app: 'crm', amountMinor: 9900, idempotencyKey: 'paid' },
      counters: ['day'],
      counterTtlMs: 86_400_000,
      window: { inn: '7707083893', kind: 'dossier', until: clock.now() + 900_000 },
    });
    await first.openCharge(pending('open'), day);
    await first.set('hot', 'memory only', 60_000);
    await first.close();

    const second = open();
    try {
      expect(await second.readLedger(0, clock.now() + 1)).toEqual([
        { id: `${clock.now()}-0`, at: clock.now(), app: 'crm', amountMinor: 9900, idempotencyKey: 'paid' },
      ]);
      expect(await second.readCounters(['day'])).toEqual([
        { key: 'day', spentMinor: 9900, reservedMinor: 9900 },
      ]);
      expect(await second.isRecorded('paid')).toBe(true);
      expect(await second.pendingCharges()).toEqual([pending('open')]);
      expect((await second.windows('7707083893')).dossierUntil).toBe(clock.now() + 900_000);
      expect(await second.get('hot')).toBeNull(); // hot state is process memory
      // The cap still holds after the reopen: 9,900 spent + 9,900 held + 9,900 more fits 30,000,
      // a fourth does not.
      expect((await second.openCharge(pending('third'), day)).ok).toBe(true);
      expect(await second.openCharge(pending('fourth'), day)).toEqual({
        ok: false,
        key: 'day',
        limitMinor: 30_000,
        spentMinor: 9900,
        reservedMinor: 19_800,
      });
      // A replay of the recorded charge is still recognised: no second entry, no double spend.
      expect(
        (
          await second.recordCharge({
            key: 'paid',
            amountMinor: 9900,
            entry: { at: clock.now(), app: 'crm', amountMinor: 9900 },
            counters: ['day'],
            counterTtlMs: 86_400_000,
          })
        ).recorded,
      ).toBe(false);
      expect(await second.readLedger(0, clock.now() + 1)).toHaveLength(1);
    } finally {
      await second.close();
    }
  });

  it('refuses a second owner of the same state directory with a one-line message', async () => {
    const first = open();
    try {
      let message = '';
      try {
        open();
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toContain(`money database ${join(dir, 'money.db')} is in use by another cpgw process`);
      expect(message).toContain(`pid ${process.pid}`);
      expect(message).not.toContain('\n');
      await first.appendLedger({ at: clock.now(), n: 1 }); // the owner is untouched
    } finally {
      await first.close();
    }
    const again = open(); // closed: the lock was released
    expect(await again.readLedger(0, clock.now() + 1)).toHaveLength(1);
    await again.close();
  });

  it('takes over a lock and a SQLite lock directory left by a process that no longer runs', async () => {
    const first = open();
    await first.appendLedger({ at: clock.now(), n: 1 });
    await first.close();
    // What a kill -9 leaves: the lock file naming a dead pid, and the VFS's lock directory.
    writeFileSync(
      join(dir, LOCK_FILE),
      JSON.stringify({
        pid: 2 ** 22 + 7,
        host: (await import('node:os')).hostname(),
        boot: '',
        start: '',
        nonce: 'x',
      }),
    );
    mkdirSync(join(dir, 'money.db.lock'));
    const second = open();
    try {
      expect(await second.readLedger(0, clock.now() + 1)).toHaveLength(1);
      await second.appendLedger({ at: clock.now(), n: 2 });
    } finally {
      await second.close();
    }
  });

  it('sweeps expired counters, holds, claims and windows from the file every 1,024 writes', async () => {
    const store = open();
    for (let i = 0; i < 50; i++) {
      await store.reserve({
        id: `h${i}`,
        amountMinor: 1,
        counters: [{ key: `old:${i}`, limitMinor: null, ttlMs: 1000 }],
        holdMs: 1000,
      });
      await store.openWindow(`inn${i}`, 'dossier', clock.now() + 1000, clock.now());
    }
    await store.recordCharge({
      key: 'claim',
      amountMinor: 5,
      entry: { at: clock.now(), n: 1 },
      counters: ['old:0'],
      counterTtlMs: 1000,
    });
    clock.advance(86_400_000 + 1);
    for (let i = 0; i < 1024; i++) await store.addSpend(['live'], 1, 3_600_000);
    await store.close();
    const db = new MoneyDb(dir);
    try {
      const count = (table: string) => Number(db.get(`SELECT COUNT(*) AS n FROM ${table}`)!.n);
      expect(['counters', 'holds', 'claims', 'windows', 'ledger'].map(count)).toEqual([1, 0, 0, 0, 1]);
    } finally {
      db.close();
    }
  });

  it('a closed store answers every money step with StoreUnavailableError (the gateway: 503, outbox)', async () => {
    const store = open();
    await store.close();
    await expect(store.addSpend(['day'], 1, 60_000)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.readLedger(0, 1)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('a lock from another host name is taken over only once its heartbeat is 30 s old', async () => {
    const lock = join(dir, LOCK_FILE);
    writeFileSync(
      lock,
      JSON.stringify({ pid: 1, host: 'another-container', boot: '', start: '', nonce: 'y' }),
    );
    expect(() => open()).toThrow(/in use by another cpgw process \(pid 1 on another-container\)/);
    const old = new Date(Date.now() - 31_000);
    utimesSync(lock, old, old);
    const store = open();
    await store.close();
  });

  it('refuses a money file whose schema is newer than this code knows', async () => {
    const db = new MoneyDb(dir);
    db.tx(() => db.run('PRAGMA user_version = 99'));
    db.close();
    expect(() => open()).toThrow(
      new RegExp(`schema version 99, newer than this cpgw knows \\(${SCHEMA_VERSION}\\)`),
    );
    // The refused open released its lock: a later open meets the same refusal, not "in use".
    expect(() => open()).toThrow(/schema version 99/);
  });
});
