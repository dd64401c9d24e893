// Every Grafana panel and every alert rule names only series the gateway exports (the catalogue
// plus prom-client's default process metrics, read from a real registry), groups only by labels
// those series carry; the dashboards are read-only, name no datasource uid (a ${datasource}
// variable instead) and filter every series by their job and app variables (several deployments).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { GatewayMetrics } from '../../src/metrics/gateway-metrics.ts';
import { DASHBOARD_DIR, dashboardQueries, selectorsIn, seriesIn } from '../helpers/dashboards.ts';

const metrics = new GatewayMetrics({ apps: ['alpha'], price: () => 100 });
const exported = new Map<string, Set<string>>();
for (const m of await metrics.registry.getMetricsAsJSON()) {
  const labels = new Set<string>(['instance', 'job', 'le']);
  for (const v of m.values) for (const l of Object.keys(v.labels)) labels.add(l);
  for (const l of (metrics.registry.getSingleMetric(m.name) as unknown as { labelNames?: string[] })
    ?.labelNames ?? [])
    labels.add(l);
  const names =
    String(m.type) === 'histogram' ? ['_bucket', '_sum', '_count'].map((s) => m.name + s) : [m.name];
  for (const n of names) exported.set(n, labels);
}

function checkExpr(expr: string): string[] {
  const problems: string[] = [];
  const names = seriesIn(expr);
  if (names.length === 0) problems.push(`names no cpgw series: ${expr}`);
  for (const name of names) if (!exported.has(name)) problems.push(`${name} is not exported`);
  const known = new Set(names.flatMap((n) => [...(exported.get(n) ?? [])]));
  for (const by of expr.matchAll(/\bby\s*\(([^)]*)\)/g))
    for (const label of by[1]!.split(',').map((s) => s.trim()))
      if (label && !known.has(label)) problems.push(`by (${label}) is no label of ${names.join(', ')}`);
  return problems;
}

describe('dashboards', () => {
  const queries = dashboardQueries();

  it('has at least three dashboards with panels', () => {
    expect(new Set(queries.map((q) => q.dashboard)).size).toBeGreaterThanOrEqual(3);
    expect(queries.length).toBeGreaterThan(25);
  });

  it('every panel query names only exported series and labels', () => {
    const problems = queries.flatMap((q) =>
      checkExpr(q.expr).map((p) => `${q.dashboard} / ${q.panel}: ${p}`),
    );
    expect(problems).toEqual([]);
  });

  it('the checker refuses a series nobody exports', () => {
    expect(checkExpr('sum(rate(cpgw_made_up_total[5m]))')).toEqual(['cpgw_made_up_total is not exported']);
    expect(checkExpr('sum by (inn) (cpgw_spend_minor_total)')).toHaveLength(1);
  });

  /** Grafana's reference to the dashboard's datasource variable. */
  const DATASOURCE = ['$', '{datasource}'].join('');
  const files = readdirSync(DASHBOARD_DIR).filter((f) => f.endsWith('.json'));
  // biome-ignore lint/suspicious/noExplicitAny: dashboards are free-form JSON read for checks
  const read = (file: string): Record<string, any> =>
    JSON.parse(readFileSync(join(DASHBOARD_DIR, file), 'utf8'));

  it('dashboards are read-only and name no datasource uid: every panel and query uses the datasource variable', () => {
    expect(files.sort()).toEqual(['finance.json', 'limits.json', 'platform.json']);
    const ds = parse(
      readFileSync(join(DASHBOARD_DIR, '..', 'provisioning', 'datasources', 'prometheus.yaml'), 'utf8'),
    ) as { datasources: Array<{ uid: string }> };
    for (const file of files) {
      const d = read(file);
      expect(d.editable, file).toBe(false);
      // Not the provisioned uid, nor any other: a deployment with its own datasource picks it.
      expect(JSON.stringify(d), file).not.toContain(ds.datasources[0]!.uid);
      for (const p of d.panels) {
        expect(p.datasource, `${file} / ${p.title}`).toEqual({ type: 'prometheus', uid: DATASOURCE });
        for (const t of p.targets ?? [])
          expect(t.datasource ?? p.datasource, `${file} / ${p.title}`).toEqual(p.datasource);
      }
    }
  });

  it('every dashboard has a datasource variable and multi-value job and app variables (All = .*)', () => {
    for (const file of files) {
      const vars = Object.fromEntries(
        (read(file).templating.list as Array<{ name: string }>).map((v) => [v.name, v]),
      ) as Record<string, Record<string, unknown>>;
      expect(vars.datasource, file).toMatchObject({ type: 'datasource', query: 'prometheus' });
      expect(vars.datasource!.current, file).toBeUndefined();
      for (const name of ['job', 'app']) {
        expect(vars[name], `${file} ${name}`).toMatchObject({
          type: 'query',
          datasource: { type: 'prometheus', uid: DATASOURCE },
          includeAll: true,
          multi: true,
          allValue: '.*',
        });
        const query = (vars[name]!.query as { query: string }).query;
        expect(query, `${file} ${name}`).toMatch(
          new RegExp(`^label_values\\(\\w+(\\{[^}]*\\})?, ${name}\\)$`),
        );
        expect(checkExpr(query.replace(/^label_values\((.*), \w+\)$/, '$1')), `${file} ${name}`).toEqual([]);
      }
      expect((vars.app!.query as { query: string }).query).toContain('job=~"$job"');
    }
  });

  it('every series selector in every panel filters by $job, and by $app where the series has an app label', () => {
    const problems: string[] = [];
    for (const q of queries)
      for (const { name, matchers } of selectorsIn(q.expr)) {
        const where = `${q.dashboard} / ${q.panel}: ${name}${matchers}`;
        if (!matchers.includes('job=~"$job"')) problems.push(`${where} lacks job=~"$job"`);
        if (exported.get(name)?.has('app') && !matchers.includes('app=~"$app"'))
          problems.push(`${where} lacks app=~"$app"`);
      }
    expect(problems).toEqual([]);
    expect(selectorsIn('sum(rate(cpgw_requests_total[5m]))')).toEqual([
      { name: 'cpgw_requests_total', matchers: '' },
    ]);
  });
});

describe('alert rules', () => {
  it('every rule names only exported series and labels', () => {
    const file = join(import.meta.dirname, '..', '..', 'deploy', 'prometheus', 'cpgw-alerts.yaml');
    const rules = (
      parse(readFileSync(file, 'utf8')) as {
        groups: Array<{ rules: Array<{ alert: string; expr: string }> }>;
      }
    ).groups.flatMap((g) => g.rules);
    expect(rules.length).toBeGreaterThanOrEqual(9);
    const problems = rules.flatMap((r) => checkExpr(r.expr).map((p) => `${r.alert}: ${p}`));
    expect(problems).toEqual([]);
  });
});

describe('README', () => {
  it('the metrics table lists every exported cpgw series', async () => {
    const { METRICS } = await import('../../src/metrics/metric-catalogue.ts');
    const readme = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');
    const missing = Object.values(METRICS)
      .map((m) => m.name)
      .filter((n) => !readme.includes(`| \`${n}\` |`));
    expect(missing).toEqual([]);
  });
});
