// The FinanceStore on Redis (one server or a Cluster), for replicas sharing a store: its own
// connection and keys under the store prefix, all in the `{finance}` hash tag so each script's
// keys share one cluster slot:
//
//   <prefix>{finance}:budgets   hash: "<scope>:<period>" -> StoredBudget JSON
//   <prefix>{finance}:version   the settings version (INCR on every budget write)
//   <prefix>{finance}:audit     stream: id "<ms>-<seq>", field e = AuditRecord JSON
//
// A budget write is ONE Lua script: compare the stored version, store the budget, append the
// audit entry (trimming entries older than 400 days), bump the settings version. Audit ids follow
// the entry's `at` from the gateway clock (a late entry takes the last id's ms), so ranges and
// cursors are the same on every backend.
//
// Must never: write a budget without its audit entry (or the reverse), touch keys outside its
// prefix, or wait on a dead Redis (the connection fails fast: store/redis/connection.ts).
import type { Period } from '../cost/budget-periods.ts';
import { openClient, quit, type RedisTarget } from '../store/redis/connection.ts';
import { RedisKeys } from '../store/redis/keys.ts';
import { RedisLink } from '../store/redis/link.ts';
import { lua } from '../store/redis/lua.ts';
import {
  AUDIT_RETENTION_MS,
  type AuditEntry,
  type AuditPage,
  type AuditQuery,
  type AuditRecord,
  auditMatches,
  type BudgetWrite,
  type BudgetWriteResult,
  checkBudgetWrite,
  type FinanceStore,
  type StoredBudget,
} from './finance-store.ts';

/** Appends ARGV[json] at ARGV[at] to KEYS[audit] as "<ms>-<seq>" (never going back), trims, sets `id`. */
const APPEND = (auditKey: string, json: string, at: string, keep: string) => `
local at = math.floor(tonumber(${at}))
local seq = 0
local last = redis.call('XREVRANGE', ${auditKey}, '+', '-', 'COUNT', 1)
if #last > 0 then
  local lm, ls = string.match(last[1][1], '^(%d+)-(%d+)$')
  lm = tonumber(lm)
  if at <= lm then
    at = lm
    seq = tonumber(ls) + 1
  end
end
if at == 0 and seq == 0 then seq = 1 end
local id = string.format('%.0f-%.0f', at, seq)
redis.call('XADD', ${auditKey}, id, 'e', ${json})
redis.call('XTRIM', ${auditKey}, 'MINID', string.format('%.0f', math.max(0, at - tonumber(${keep}))))
`;

// KEYS: budgets, version, audit. ARGV: field, expected version, budget JSON, audit JSON, at, keep ms.
const WRITE_BUDGET = lua(
  'finance_write_budget',
  `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
local curVersion = 0
if cur then curVersion = tonumber(cjson.decode(cur)['version']) end
if curVersion ~= tonumber(ARGV[2]) then return {0, cur or ''} end
-- The entry first: a refused XADD (the only step that can fail) leaves nothing written.
${APPEND('KEYS[3]', 'ARGV[4]', 'ARGV[5]', 'ARGV[6]')}
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
local v = redis.call('INCR', KEYS[2])
return {1, v, id}
`,
);

// KEYS: audit. ARGV: audit JSON, at, keep ms.
const APPEND_AUDIT = lua(
  'finance_append_audit',
  `${APPEND('KEYS[1]', 'ARGV[1]', 'ARGV[2]', 'ARGV[3]')}
return id
`,
);

export interface RedisFinanceStoreOptions {
  target: RedisTarget;
  /** The store prefix (config store.prefix); default "cpgw:". */
  prefix?: string;
  onError?: (error: unknown) => void;
}

export class RedisFinanceStore implements FinanceStore {
  readonly kind = 'redis' as const;
  private readonly link: RedisLink;
  private readonly keys: { budgets: string; version: string; audit: string };

  constructor(options: RedisFinanceStoreOptions) {
    const onError = options.onError ?? ((e) => process.emitWarning(e instanceof Error ? e : String(e)));
    const names = new RedisKeys(options.prefix ?? 'cpgw:');
    this.link = new RedisLink(openClient(options.target, {}, onError), names, onError);
    const base = `${names.prefix}{finance}:`;
    this.keys = { budgets: `${base}budgets`, version: `${base}version`, audit: `${base}audit` };
  }

  async settingsVersion(): Promise<number> {
    const { link } = this;
    return Number((await link.run(() => link.client.get(this.keys.version))) ?? 0);
  }

  async readBudgets(): Promise<{ settingsVersion: number; budgets: StoredBudget[] }> {
    const { link } = this;
    const replies = await link.run(() =>
      link.client.multi().hgetall(this.keys.budgets).get(this.keys.version).exec(),
    );
    if (!replies) throw new Error('finance: the budgets read was aborted');
    for (const [err] of replies) if (err) throw err;
    const all = (replies[0]![1] ?? {}) as Record<string, string>;
    return {
      settingsVersion: Number(replies[1]![1] ?? 0),
      budgets: Object.values(all).map((json) => JSON.parse(json) as StoredBudget),
    };
  }

  async readBudget(scope: string, period: Period): Promise<StoredBudget | null> {
    const { link } = this;
    const json = await link.run(() => link.client.hget(this.keys.budgets, `${scope}:${period}`));
    return json ? (JSON.parse(json) as StoredBudget) : null;
  }

  async writeBudget(write: BudgetWrite): Promise<BudgetWriteResult> {
    checkBudgetWrite(write);
    const { budget } = write;
    const reply = (await this.link.script(
      WRITE_BUDGET,
      [this.keys.budgets, this.keys.version, this.keys.audit],
      [
        `${budget.scope}:${budget.period}`,
        write.expectVersion,
        JSON.stringify(budget),
        JSON.stringify(write.audit),
        Math.floor(write.audit.at),
        AUDIT_RETENTION_MS,
      ],
    )) as [number, number | string, string?];
    if (reply[0] !== 1) {
      const current = String(reply[1]);
      return { ok: false, current: current === '' ? null : (JSON.parse(current) as StoredBudget) };
    }
    return { ok: true, settingsVersion: Number(reply[1]), auditId: String(reply[2]) };
  }

  async appendAudit(record: AuditRecord): Promise<AuditEntry> {
    const json = JSON.stringify(record);
    const id = String(
      await this.link.script(
        APPEND_AUDIT,
        [this.keys.audit],
        [json, Math.floor(record.at), AUDIT_RETENTION_MS],
      ),
    );
    return { ...(JSON.parse(json) as AuditRecord), id };
  }

  async readAudit(query: AuditQuery): Promise<AuditPage> {
    const { link } = this;
    const out: AuditEntry[] = [];
    const last = Math.ceil(query.to) - 1;
    const from = Math.max(0, Math.ceil(query.from));
    if (last < from || query.limit <= 0) return { entries: [], next: null };
    let start =
      query.after !== undefined && Number(query.after.split('-')[0]) >= from
        ? `(${query.after}`
        : String(from);
    const batch = Math.max(200, query.limit + 1);
    for (;;) {
      const rows = await link.run(() =>
        link.client.xrange(this.keys.audit, start, String(last), 'COUNT', batch),
      );
      for (const [id, fields] of rows) {
        const record = JSON.parse(fields[fields.indexOf('e') + 1] ?? '{}') as AuditRecord;
        if (!auditMatches(record, query)) continue;
        if (out.length === query.limit) return { entries: out, next: out.at(-1)!.id };
        out.push({ ...record, id });
      }
      if (rows.length < batch) return { entries: out, next: null };
      start = `(${rows.at(-1)![0]}`;
    }
  }

  async close(): Promise<void> {
    await quit(this.link.client);
  }
}
