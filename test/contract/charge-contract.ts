// The money role's part of the Store contract (charge-store.ts; see contract-harness.ts), run over
// every backend: all-or-none open with a pending entry, caps, idempotent record, release, leases
// on the caller's clock, windows that never shorten, pending listing, and concurrent records.
import { describe, expect, it } from 'vitest';
import type { BudgetCounterSpec, ChargeRecord, PendingCharge } from '../../src/store/index.ts';
import { type ContractContext, SLACK_MS, TTL } from './contract-harness.ts';

const INN = '7707083893';
const DAY = 'app:crm:day:2026-01-15';
const MONTH = 'global:month:2026-01';

export function describeChargeContract(t: ContractContext): void {
  const specs = (dayCap: number | null = 1000): BudgetCounterSpec[] => [
    { key: DAY, limitMinor: dayCap, ttlMs: 60_000 },
    { key: MONTH, limitMinor: null, ttlMs: 60_000 },
  ];
  const pending = (key: string, over: Partial<PendingCharge> = {}): PendingCharge => ({
    key,
    requestId: `req-${key}`,
    app: 'crm',
    operation: 'company',
    kind: 'dossier',
    inn: INN,
    estimateMinor: 300,
    at: t.h.clock.now(),
    method: 'GET',
    target: `/v1/company/${INN}`,
    body: null,
    opens: 'dossier',
    counters: [DAY, MONTH],
    counterTtlMs: 60_000,
    owner: 'replica-a',
    leaseUntil: t.h.clock.now() + 10_000,
    reconcileAttempts: 0,
    ...over,
  });
  const record = (key: string, amountMinor = 250, over: Partial<ChargeRecord> = {}): ChargeRecord => ({
    key,
    amountMinor,
    entry: {
      at: t.h.clock.now(),
      app: 'crm',
      operation: 'company',
      kind: 'dossier',
      inn: INN,
      amountMinor,
      upstreamRequestId: `up-${key}`,
      requestId: `req-${key}`,
      idempotencyKey: key,
    },
    counters: [DAY, MONTH],
    counterTtlMs: 60_000,
    window: { inn: INN, kind: 'dossier', until: t.h.clock.now() + 900_000 },
    ...over,
  });
  const counters = () => t.store.readCounters([DAY, MONTH]);
  const ledger = () => t.store.readLedger(0, t.h.clock.now() + 86_400_000);

  describe('charges', () => {
    it('openCharge holds the estimate on every counter and stores the pending entry, in one step', async () => {
      const p = pending('k1');
      expect(await t.store.openCharge(p, specs())).toEqual({ ok: true });
      expect(await counters()).toEqual([
        { key: DAY, spentMinor: 0, reservedMinor: 300 },
        { key: MONTH, spentMinor: 0, reservedMinor: 300 },
      ]);
      expect(await t.store.pendingCharges()).toEqual([p]);
      expect(await t.store.isRecorded('k1')).toBe(false);
    });

    it('openCharge refuses past a cap and then writes nothing (no hold, no pending entry)', async () => {
      await t.store.addSpend([DAY], 800, 60_000);
      const refused = await t.store.openCharge(pending('k1'), specs(1000));
      expect(refused).toEqual({ ok: false, key: DAY, limitMinor: 1000, spentMinor: 800, reservedMinor: 0 });
      expect(await counters()).toEqual([
        { key: DAY, spentMinor: 800, reservedMinor: 0 },
        { key: MONTH, spentMinor: 0, reservedMinor: 0 },
      ]);
      expect(await t.store.pendingCharges()).toEqual([]);
      expect(await t.store.openCharge(pending('k2', { estimateMinor: 200 }), specs(1000))).toEqual({
        ok: true,
      });
      expect(
        await t.store.reserve({ id: 'other', amountMinor: 1, counters: specs(1000), holdMs: 60_000 }),
      ).toMatchObject({ ok: false, key: DAY, spentMinor: 800, reservedMinor: 200 });
    });

    it('a charge hold never expires by time (only record or release end it)', async () => {
      await t.store.openCharge(pending('k1'), specs());
      await t.h.pass(TTL + SLACK_MS);
      if (t.h.exactTime) await t.h.pass(6 * 3_600_000);
      expect((await counters())[0]).toEqual({ key: DAY, spentMinor: 0, reservedMinor: 300 });
      expect(await t.store.pendingCharges()).toHaveLength(1);
    });

    it('recordCharge settles the hold to the charge, appends one ledger entry, opens the window', async () => {
      await t.store.openCharge(pending('k1'), specs());
      const r = record('k1', 250);
      const answer = await t.store.recordCharge(r);
      expect(answer).toEqual({
        recorded: true,
        windows: { dossierUntil: r.window!.until, requisitesUntil: 0 },
      });
      expect(await counters()).toEqual([
        { key: DAY, spentMinor: 250, reservedMinor: 0 },
        { key: MONTH, spentMinor: 250, reservedMinor: 0 },
      ]);
      const entries = await ledger();
      expect(entries).toHaveLength(1);
      expect(entries[0]).toEqual({ ...r.entry, id: entries[0]!.id });
      expect(await t.store.pendingCharges()).toEqual([]);
      expect(await t.store.isRecorded('k1')).toBe(true);
      expect(await t.store.windows(INN)).toEqual({ dossierUntil: r.window!.until, requisitesUntil: 0 });
    });

    it('recordCharge is idempotent: a replay answers recorded:false, no double spend, no second entry', async () => {
      await t.store.openCharge(pending('k1'), specs());
      expect((await t.store.recordCharge(record('k1', 250))).recorded).toBe(true);
      const again = await t.store.recordCharge(record('k1', 250));
      expect(again.recorded).toBe(false);
      expect(again.windows?.dossierUntil).toBe(record('k1').window!.until);
      expect(await counters()).toEqual([
        { key: DAY, spentMinor: 250, reservedMinor: 0 },
        { key: MONTH, spentMinor: 250, reservedMinor: 0 },
      ]);
      expect(await ledger()).toHaveLength(1);
    });

    it('recordCharge when the claim already exists only releases the holds and drops the entry', async () => {
      expect((await t.store.recordCharge(record('k1', 300, { window: undefined }))).recorded).toBe(true);
      // The same logical request opened again (e.g. a retry that did not know it was recorded).
      await t.store.openCharge(pending('k1', { estimateMinor: 400 }), specs());
      expect((await counters())[0]).toEqual({ key: DAY, spentMinor: 300, reservedMinor: 400 });
      expect(await t.store.recordCharge(record('k1', 300, { window: undefined }))).toEqual({
        recorded: false,
        windows: null,
      });
      expect(await counters()).toEqual([
        { key: DAY, spentMinor: 300, reservedMinor: 0 },
        { key: MONTH, spentMinor: 300, reservedMinor: 0 },
      ]);
      expect(await t.store.pendingCharges()).toEqual([]);
      expect(await ledger()).toHaveLength(1);
    });

    it('recordCharge without a hold adds spend; holds on counters not settled are released', async () => {
      await t.store.openCharge(pending('k1', { counters: [DAY, MONTH, 'app:crm:month:2026-01'] }), [
        ...specs(),
        { key: 'app:crm:month:2026-01', limitMinor: 5000, ttlMs: 60_000 },
      ]);
      await t.store.recordCharge(record('k1', 250, { counters: [DAY] }));
      expect(await t.store.readCounters([DAY, MONTH, 'app:crm:month:2026-01'])).toEqual([
        { key: DAY, spentMinor: 250, reservedMinor: 0 },
        { key: MONTH, spentMinor: 0, reservedMinor: 0 },
        { key: 'app:crm:month:2026-01', spentMinor: 0, reservedMinor: 0 },
      ]);
      await t.store.recordCharge(record('k2', 100, { counters: ['app:erp:day:2026-01-15'] }));
      expect(await t.store.readCounters(['app:erp:day:2026-01-15'])).toEqual([
        { key: 'app:erp:day:2026-01-15', spentMinor: 100, reservedMinor: 0 },
      ]);
    });

    it('releaseCharge drops the holds and the entry; a no-op when gone', async () => {
      await t.store.openCharge(pending('k1'), specs());
      await t.store.openCharge(pending('k2', { estimateMinor: 100 }), specs());
      await t.store.releaseCharge('k1');
      await t.store.releaseCharge('k1');
      await t.store.releaseCharge('never');
      expect((await counters())[0]).toEqual({ key: DAY, spentMinor: 0, reservedMinor: 100 });
      expect((await t.store.pendingCharges()).map((p) => p.key)).toEqual(['k2']);
      expect(await t.store.isRecorded('k1')).toBe(false);
      expect(await ledger()).toEqual([]);
    });

    it('releasing a charge opened at 0 leaves every counter as it was; one that replaced a hold gives it back', async () => {
      await t.store.openCharge(pending('held', { estimateMinor: 200 }), specs());
      // Opened at 0 with no hold before it: no counter written, none to give back.
      await t.store.openCharge(pending('free', { estimateMinor: 0 }), specs());
      // Opened at 300, then again at 0 under the same key (a retry judged covered): its hold is 0 now.
      await t.store.openCharge(pending('again'), specs());
      await t.store.openCharge(pending('again', { estimateMinor: 0 }), specs());
      expect((await counters())[0]).toEqual({ key: DAY, spentMinor: 0, reservedMinor: 200 });
      await t.store.releaseCharge('free');
      await t.store.releaseCharge('again');
      expect(await counters()).toEqual([
        { key: DAY, spentMinor: 0, reservedMinor: 200 },
        { key: MONTH, spentMinor: 0, reservedMinor: 200 },
      ]);
      expect((await t.store.pendingCharges()).map((p) => p.key)).toEqual(['held']);
      // The room the 0-holds never took is all there: 800 more fit under the cap of 1000.
      expect((await t.store.openCharge(pending('fits', { estimateMinor: 800 }), specs())).ok).toBe(true);
      await t.store.releaseCharge('held');
      expect((await counters())[0]).toEqual({ key: DAY, spentMinor: 0, reservedMinor: 800 });
    });

    it('a charge estimated at 0 (inside a window) is released and recorded like any other', async () => {
      // Redis: the hold's 0 came back as -0 in Lua and HINCRBY refused "-0" (not an integer),
      // so every free call's release failed and went to the outbox and the reconciler.
      expect(await t.store.openCharge(pending('z1', { estimateMinor: 0 }), specs())).toEqual({ ok: true });
      expect(await t.store.openCharge(pending('z2', { estimateMinor: 0 }), specs())).toEqual({ ok: true });
      await t.store.releaseCharge('z1');
      expect(await t.store.recordCharge(record('z2', 250))).toMatchObject({ recorded: true });
      expect(await counters()).toEqual([
        { key: DAY, spentMinor: 250, reservedMinor: 0 },
        { key: MONTH, spentMinor: 250, reservedMinor: 0 },
      ]);
      expect(await t.store.pendingCharges()).toEqual([]);
    });

    it("leases: only the owner renews; takeOver only after the lease ended, on the caller's clock", async () => {
      const clock = t.h.clock;
      await t.store.openCharge(pending('k1', { leaseUntil: clock.now() + 10_000 }), specs());
      expect(await t.store.renewCharge('k1', 'replica-b', clock.now() + 20_000)).toBe(false);
      expect(await t.store.renewCharge('k1', 'replica-a', clock.now() + 20_000)).toBe(true);
      clock.advance(15_000);
      expect(await t.store.takeOverCharge('k1', 'replica-b', clock.now(), clock.now() + 10_000)).toBeNull();
      clock.advance(5_000);
      const taken = await t.store.takeOverCharge('k1', 'replica-b', clock.now(), clock.now() + 10_000);
      expect(taken).toEqual({
        ...pending('k1'),
        at: taken!.at,
        owner: 'replica-b',
        leaseUntil: clock.now() + 10_000,
        reconcileAttempts: 1,
      });
      expect(await t.store.renewCharge('k1', 'replica-a', clock.now() + 60_000)).toBe(false);
      expect(await t.store.takeOverCharge('k1', 'replica-c', clock.now(), clock.now() + 10_000)).toBeNull();
      expect(await t.store.renewCharge('k1', 'replica-b', 0)).toBe(true); // outcome unknown: free at once
      const again = await t.store.takeOverCharge('k1', 'replica-c', clock.now(), clock.now() + 10_000);
      expect(again).toMatchObject({ owner: 'replica-c', reconcileAttempts: 2 });
      expect((await t.store.pendingCharges())[0]).toMatchObject({ owner: 'replica-c', reconcileAttempts: 2 });
      await t.store.releaseCharge('k1');
      expect(await t.store.renewCharge('k1', 'replica-c', clock.now() + 10_000)).toBe(false);
      expect(await t.store.takeOverCharge('k1', 'replica-c', clock.now() + 1e9, 0)).toBeNull();
    });

    it('lists pending entries oldest first, at most limit', async () => {
      const t0 = t.h.clock.now();
      await t.store.openCharge(pending('late', { at: t0 + 30 }), specs(null));
      await t.store.openCharge(pending('early', { at: t0 + 10 }), specs(null));
      await t.store.openCharge(pending('middle', { at: t0 + 20 }), specs(null));
      expect((await t.store.pendingCharges()).map((p) => p.key)).toEqual(['early', 'middle', 'late']);
      expect((await t.store.pendingCharges(2)).map((p) => p.key)).toEqual(['early', 'middle']);
      expect(await t.store.pendingCharges(0)).toEqual([]);
    });

    it('windows max-merge and never shorten; listWindows shows those ending after now', async () => {
      const now = t.h.clock.now();
      expect(await t.store.windows(INN)).toEqual({ dossierUntil: 0, requisitesUntil: 0 });
      expect(await t.store.openWindow(INN, 'requisites', now + 900_000, now)).toEqual({
        dossierUntil: 0,
        requisitesUntil: now + 900_000,
      });
      expect(await t.store.openWindow(INN, 'requisites', now + 100_000, now)).toEqual({
        dossierUntil: 0,
        requisitesUntil: now + 900_000,
      });
      const r = await t.store.recordCharge(
        record('k1', 250, { window: { inn: INN, kind: 'dossier', until: now + 600_000 } }),
      );
      expect(r.windows).toEqual({ dossierUntil: now + 600_000, requisitesUntil: now + 900_000 });
      const shorter = await t.store.recordCharge(
        record('k2', 250, { window: { inn: INN, kind: 'dossier', until: now + 1_000 } }),
      );
      expect(shorter.windows).toEqual({ dossierUntil: now + 600_000, requisitesUntil: now + 900_000 });
      await t.store.openWindow('7736050003', 'dossier', now + 50_000, now);
      await t.store.openWindow('500100732259', 'dossier', now - 1, now); // already over: not kept
      const listed = await t.store.listWindows(now);
      expect(listed.sort((a, b) => a.inn.localeCompare(b.inn))).toEqual([
        { inn: '7707083893', dossierUntil: now + 600_000, requisitesUntil: now + 900_000 },
        { inn: '7736050003', dossierUntil: now + 50_000, requisitesUntil: 0 },
      ]);
      expect(await t.store.listWindows(now + 100_000)).toEqual([
        { inn: '7707083893', dossierUntil: now + 600_000, requisitesUntil: now + 900_000 },
      ]);
      expect(await t.store.listWindows(now, 1)).toHaveLength(1);
      expect(await t.store.windows('500100732259')).toEqual({ dossierUntil: 0, requisitesUntil: 0 });
    });

    it("a requisites check's data opens a requisites window and ends an open dossier window, in both operations", async () => {
      const now = t.h.clock.now();
      await t.store.openWindow(INN, 'dossier', now + 900_000, now);
      expect(await t.store.openWindow(INN, 'requisites_check', now + 900_000, now + 60_000)).toEqual({
        dossierUntil: now + 60_000,
        requisitesUntil: now + 900_000,
      });
      const other = '7736050003';
      await t.store.openWindow(other, 'dossier', now + 900_000, now);
      const r = await t.store.recordCharge(
        record('rc', 1500, { window: { inn: other, kind: 'requisites_check', until: now + 950_000 } }),
      );
      expect(r.windows!.requisitesUntil).toBe(now + 950_000);
      expect(r.windows!.dossierUntil).toBeLessThanOrEqual(t.h.clock.now());
    });

    it('budget and ledger roles see what recordCharge wrote', async () => {
      await t.store.openCharge(pending('k1'), specs(1000));
      await t.store.recordCharge(record('k1', 700));
      expect(
        await t.store.reserve({ id: 'next', amountMinor: 301, counters: specs(1000), holdMs: 60_000 }),
      ).toEqual({ ok: false, key: DAY, limitMinor: 1000, spentMinor: 700, reservedMinor: 0 });
      const id = await t.store.appendLedger({ at: t.h.clock.now(), app: 'erp', amountMinor: 5 });
      expect((await ledger()).map((e) => e.id)).toHaveLength(2);
      expect((await ledger())[1]!.id).toBe(id);
    });

    it('checks arguments before writing anything', async () => {
      await expect(t.store.recordCharge(record('k1', 0))).rejects.toBeInstanceOf(RangeError);
      await expect(t.store.recordCharge(record('', 5))).rejects.toBeInstanceOf(RangeError);
      await expect(t.store.openCharge(pending('k1', { estimateMinor: 1.5 }), specs())).rejects.toBeInstanceOf(
        RangeError,
      );
      expect(await ledger()).toEqual([]);
      expect(await t.store.pendingCharges()).toEqual([]);
      expect(await t.store.isRecorded('k1')).toBe(false);
    });

    it('many concurrent records of one key (on two connections when the backend has them): one entry', async () => {
      const other = t.h.replica ? await t.h.replica() : t.store;
      try {
        await t.store.openCharge(pending('k1'), specs());
        const answers = await Promise.all(
          Array.from({ length: 24 }, (_, i) => (i % 2 ? other : t.store).recordCharge(record('k1', 250))),
        );
        expect(answers.filter((a) => a.recorded)).toHaveLength(1);
        expect(await ledger()).toHaveLength(1);
        expect(await counters()).toEqual([
          { key: DAY, spentMinor: 250, reservedMinor: 0 },
          { key: MONTH, spentMinor: 250, reservedMinor: 0 },
        ]);
      } finally {
        if (other !== t.store) await other.close();
      }
    });
  });
}
