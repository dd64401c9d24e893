// The ledger role of the Store: the append-only, time-ordered spend log. The money role
// (charge-store.ts) appends to the same log inside its atomic record step.
//
// Must never: reorder or rewrite a record once appended.

export interface LedgerRecord {
  /** Set by the store on append (monotonic, time-ordered): `<ms>-<seq>`, like a Redis stream id. */
  id?: string;
  /** ms since epoch (the caller's clock). */
  at: number;
  [field: string]: string | number | boolean | null | undefined;
}

export interface LedgerStore {
  appendLedger(record: LedgerRecord): Promise<string>;
  /**
   * Records with fromMs <= at < toMs, oldest first, at most `limit` (default 1000). Precisely, the
   * selection is by the record's id time: its `at`, or, for a record appended after one with a later
   * `at`, that later time (the log stays append-ordered; such a late record is found in the later slot).
   */
  readLedger(fromMs: number, toMs: number, limit?: number): Promise<LedgerRecord[]>;
  /**
   * Records strictly after the record with id `afterId` (`<ms>-<seq>`, as appended) whose id time
   * is < toMs, oldest first, at most `limit` (default 1000): resuming a read exactly where a page
   * ended, so records sharing one ms are neither skipped nor repeated. Throws RangeError on an id
   * that is not `<ms>-<seq>`.
   */
  readLedgerAfter(afterId: string, toMs: number, limit?: number): Promise<LedgerRecord[]>;
}
