// Which budget limit applies and when a replica learns of a change (manual clock, memory finance
// store): an admin override wins over the config until it is returned to config; null removes a
// cap; a change made behind a replica's back is seen once the memo (250 ms) has passed, not
// before, and at once after invalidate() (the bus message); started, the copy is renewed in the
// background so the reserve path does not read; a store fault keeps the last copy.
import { describe, expect, it } from 'vitest';
import { ADMIN_RIGHTS, authorizeAdmin, roleAllows } from '../../src/auth/admin-roles.ts';
import { newToken, tokenHash } from '../../src/auth/tokens.ts';
import { ManualClock } from '../../src/clock.ts';
import { configSchema } from '../../src/config/schema.ts';
import { BudgetGuard } from '../../src/cost/budget-guard.ts';
import { auditCsv, changedConfigKeys } from '../../src/finance/audit-trail.ts';
import { BudgetOverrides } from '../../src/finance/budget-overrides.ts';
import type { AuditRecord, StoredBudget } from '../../src/finance/finance-store.ts';
import { MemoryFinanceStore } from '../../src/finance/memory-finance-store.ts';
import { MemoryStore } from '../../src/store/index.ts';

const audit: AuditRecord = {
  at: 1,
  actor: 'fin',
  role: 'finance',
  client: '10.0.0.1',
  requestId: 'r',
  action: 'budget_set',
  target: 'budget:crm:day',
  before: null,
  after: null,
  reason: 'why',
};

function stored(over: Partial<StoredBudget>): StoredBudget {
  return {
    scope: 'crm',
    period: 'day',
    source: 'admin',
    limitMinor: 500,
    softMinor: null,
    version: 1,
    updatedBy: 'fin',
    updatedAt: 1,
    reason: 'why',
    ...over,
  };
}

function setup() {
  const clock = new ManualClock();
  const finance = new MemoryFinanceStore();
  const errors: unknown[] = [];
  const overrides = new BudgetOverrides({ store: finance, clock, onError: (e) => errors.push(e) });
  const guard = new BudgetGuard({
    store: new MemoryStore({ clock, cacheMaxBytes: 1 << 20 }),
    clock,
    timeZone: 'Europe/Moscow',
    global: { month: { limitMinor: 100_000 } },
    apps: new Map([['crm', { day: { limitMinor: 1000, softMinor: 800 } }]]),
    overrides,
  });
  return { clock, finance, overrides, guard, errors };
}

describe('budget limit resolution', () => {
  it('the config value applies while nothing is set; a change is not seen within the memo', async () => {
    const { finance, guard } = setup();
    await guard.refresh();
    expect(guard.resolve('crm', 'day')).toMatchObject({
      limitMinor: 1000,
      softMinor: 800,
      source: 'config',
      version: 0,
    });
    await finance.writeBudget({ budget: stored({}), expectVersion: 0, audit });
    await guard.refresh(); // within the memo: not seen yet
    expect(guard.resolve('crm', 'day').source).toBe('config');
  });

  it('a change behind the replica is seen after the memo, and at once after invalidate()', async () => {
    const { clock, finance, overrides, guard } = setup();
    await guard.refresh();
    await finance.writeBudget({ budget: stored({ limitMinor: 5 }), expectVersion: 0, audit });
    clock.advance(249);
    await guard.refresh();
    expect(guard.resolve('crm', 'day').limitMinor).toBe(1000);
    clock.advance(1);
    await guard.refresh();
    expect(guard.resolve('crm', 'day')).toMatchObject({
      limitMinor: 5,
      source: 'admin',
      version: 1,
      updatedBy: 'fin',
    });
    expect(guard.counterSpecs('crm').find((s) => s.key.startsWith('budget:app:crm:day'))?.limitMinor).toBe(5);
    await finance.writeBudget({
      budget: stored({ source: 'config', limitMinor: null, version: 2 }),
      expectVersion: 1,
      audit,
    });
    await overrides.invalidate();
    expect(guard.resolve('crm', 'day')).toMatchObject({ limitMinor: 1000, source: 'config', version: 2 });
  });

  it('started, the copy is renewed every 0.8 memo in the background: the reserve path never reads; stop() ends it', async () => {
    const { clock, finance, overrides, guard } = setup();
    let reads = 0;
    const version = finance.settingsVersion.bind(finance);
    finance.settingsVersion = () => {
      reads++;
      return version();
    };
    await guard.refresh();
    expect(reads).toBe(1);
    overrides.start();
    overrides.start(); // idempotent: one loop
    await finance.writeBudget({ budget: stored({ limitMinor: 5 }), expectVersion: 0, audit });
    const turns = async () => {
      for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
    };
    clock.advance(199);
    await turns();
    expect(reads).toBe(1);
    clock.advance(1);
    await turns();
    expect(reads).toBe(2);
    expect(guard.resolve('crm', 'day')).toMatchObject({ limitMinor: 5, source: 'admin' });
    // Steps of the memo and more on the reserve path: the background renewal answers each.
    for (let step = 0; step < 5; step++) {
      clock.advance(200);
      await turns();
      const before = reads;
      await guard.refresh();
      expect(reads).toBe(before);
    }
    expect(reads).toBe(7);
    await overrides.stop();
    clock.advance(10_000);
    await turns();
    expect(reads).toBe(7);
    // Stopped, the reserve path reads again once the memo has passed.
    await guard.refresh();
    expect(reads).toBe(8);
  });

  it('null removes a cap (hasCaps follows); a soft threshold set by finance counts for notices', async () => {
    const { finance, overrides, guard } = setup();
    expect(guard.hasCaps('crm')).toBe(true);
    await finance.writeBudget({ budget: stored({ limitMinor: null }), expectVersion: 0, audit });
    await finance.writeBudget({
      budget: stored({ scope: '_global', period: 'month', limitMinor: null, softMinor: 7 }),
      expectVersion: 0,
      audit,
    });
    await overrides.invalidate();
    expect(guard.resolve('crm', 'day').limitMinor).toBeNull();
    expect(guard.hasCaps('crm')).toBe(false);
    expect(guard.hasSoft('other')).toBe(true);
  });

  it('a store fault keeps the last copy and is reported once, never thrown', async () => {
    const { clock, finance, overrides, guard, errors } = setup();
    await finance.writeBudget({ budget: stored({ limitMinor: 5 }), expectVersion: 0, audit });
    await overrides.invalidate();
    finance.settingsVersion = async () => {
      throw new Error('store down');
    };
    clock.advance(1000);
    await expect(guard.refresh()).resolves.toBeUndefined();
    expect(guard.resolve('crm', 'day').limitMinor).toBe(5);
    clock.advance(1000);
    await guard.refresh();
    // Reported once per outage, not once per memo period.
    expect(errors).toHaveLength(1);
  });
});

describe('admin tokens and roles', () => {
  it('the rights table: viewer reads only, finance no purge/reload/redeliver, admin everything', () => {
    for (const right of Object.keys(ADMIN_RIGHTS) as Array<keyof typeof ADMIN_RIGHTS>) {
      expect(roleAllows('admin', right)).toBe(true);
      expect(roleAllows('viewer', right)).toBe(right === 'read');
    }
    expect(
      ['cache_purge', 'reload', 'webhooks_redeliver'].map((r) => roleAllows('finance', r as never)),
    ).toEqual([false, false, false]);
    expect(['read', 'budgets_write', 'reconcile'].map((r) => roleAllows('finance', r as never))).toEqual([
      true,
      true,
      true,
    ]);
  });

  it('the older tokenHash is an admin named "admin"; refusals are 404 / 401 / 403', () => {
    const legacy = newToken();
    const viewer = newToken();
    const config = {
      tokenHash: tokenHash(legacy),
      previousTokenHash: null,
      tokens: [{ name: 'v', role: 'viewer' as const, tokenHash: tokenHash(viewer) }],
    };
    expect(authorizeAdmin(`Bearer ${legacy}`, config, 'reload')).toEqual({ name: 'admin', role: 'admin' });
    expect(() => authorizeAdmin(`Bearer ${viewer}`, config, 'reload')).toThrow(
      expect.objectContaining({ status: 403, code: 'feature_unavailable' }),
    );
    expect(() => authorizeAdmin(`Bearer ${newToken()}`, config, 'read')).toThrow(
      expect.objectContaining({ status: 401 }),
    );
    expect(() =>
      authorizeAdmin(`Bearer ${legacy}`, { tokenHash: null, previousTokenHash: null, tokens: [] }, 'read'),
    ).toThrow(expect.objectContaining({ status: 404 }));
  });

  it('config: admin.tokens validated (name, role, hash), duplicates and the reserved name refused, all at once', () => {
    const hash = tokenHash(newToken());
    const result = configSchema.safeParse({
      admin: {
        tokenHash: hash,
        tokens: [
          { name: 'admin', role: 'finance', tokenHash: tokenHash(newToken()) },
          { name: 'fin', role: 'boss', tokenHash: tokenHash(newToken()) },
          { name: 'dup', role: 'viewer', tokenHash: hash },
          { name: 'dup', role: 'viewer', tokenHash: 'plain' },
        ],
      },
    });
    expect(result.success).toBe(false);
    const paths = result.error!.issues.map((i) => i.path.join('.'));
    expect(paths).toEqual(expect.arrayContaining(['admin.tokens.1.role', 'admin.tokens.3.tokenHash']));
    const ok = configSchema.parse({
      admin: { tokens: [{ name: 'fin', role: 'finance', tokenHash: hash }] },
    });
    expect(ok.admin.tokens).toEqual([{ name: 'fin', role: 'finance', tokenHash: hash }]);
    // Cross-entry rules (reported with the rest once every entry parses).
    const cross = configSchema.safeParse({
      admin: {
        tokenHash: hash,
        tokens: [
          { name: 'admin', role: 'finance', tokenHash: tokenHash(newToken()) },
          { name: 'dup', role: 'viewer', tokenHash: hash },
          { name: 'dup', role: 'viewer', tokenHash: tokenHash(newToken()) },
        ],
      },
    });
    expect(cross.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([
      'admin.tokens.0.name: the name "admin" is admin.tokenHash\'s; pick another name',
      'admin.tokens.1.tokenHash: the same token is listed twice',
      'admin.tokens.2.name: duplicate admin token name (also admin.tokens.1)',
    ]);
  });
});

describe('audit helpers', () => {
  it('a reload records the names of changed keys, never their values', () => {
    const a = configSchema.parse({ apps: [{ name: 'crm', tokenHash: tokenHash('a') }] });
    const b = configSchema.parse({
      budgets: { day: { limitMinor: 5 } },
      apps: [
        { name: 'crm', tokenHash: tokenHash('b'), budgets: { month: { limitMinor: 9 } } },
        { name: 'new', tokenHash: tokenHash('c') },
      ],
      admin: { tokens: [{ name: 'fin', role: 'finance', tokenHash: tokenHash('d') }] },
    });
    const keys = changedConfigKeys(a, b);
    expect(keys).toEqual([
      'admin.tokens.fin',
      'apps.crm.budgets.month',
      'apps.crm.tokenHash',
      'apps.new',
      'budgets.day',
    ]);
    expect(JSON.stringify(keys)).not.toContain('sha256');
    expect(changedConfigKeys(a, a)).toEqual([]);
  });

  it('CSV: header, JSON before/after, quoting, and a formula-looking cell kept as text', () => {
    const csv = auditCsv([
      { ...audit, id: '5-0', before: { limit_minor: 1 }, after: null, reason: '=HYPERLINK("x"), "quoted"' },
    ]);
    const [head, row] = csv.trim().split('\n');
    expect(head).toBe('id,time,actor,role,client,request_id,action,target,before,after,reason');
    expect(row).toBe(
      `5-0,1970-01-01T00:00:00.001Z,fin,finance,10.0.0.1,r,budget_set,budget:crm:day,"{""limit_minor"":1}",,"'=HYPERLINK(""x""), ""quoted"""`,
    );
  });
});
