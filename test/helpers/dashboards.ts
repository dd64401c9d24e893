// The dashboards under grafana/dashboards and every panel query in them, for the tests that
// check the queries name only exported series (unit) and return data on a real Prometheus.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface PanelQuery {
  dashboard: string;
  panel: string;
  expr: string;
}

export const DASHBOARD_DIR = join(import.meta.dirname, '..', '..', 'grafana', 'dashboards');

export function dashboardQueries(): PanelQuery[] {
  const out: PanelQuery[] = [];
  for (const file of readdirSync(DASHBOARD_DIR).filter((f) => f.endsWith('.json'))) {
    const d = JSON.parse(readFileSync(join(DASHBOARD_DIR, file), 'utf8')) as {
      title: string;
      panels: Array<{ title: string; targets?: Array<{ expr: string }> }>;
    };
    for (const p of d.panels)
      for (const t of p.targets ?? []) out.push({ dashboard: d.title, panel: p.title, expr: t.expr });
  }
  return out;
}

/**
 * A panel query as Prometheus runs it outside Grafana: range variables made concrete, and the
 * dashboards' `job` and `app` variables at "All" (`.*`).
 */
export function concrete(expr: string, range = '1m'): string {
  return expr
    .replaceAll('$__rate_interval', range)
    .replaceAll('$__range', range)
    .replaceAll('"$job"', '".*"')
    .replaceAll('"$app"', '".*"');
}

/** Every series selector in a PromQL expression: the metric name and its label matchers as written. */
export function selectorsIn(expr: string): Array<{ name: string; matchers: string }> {
  const out: Array<{ name: string; matchers: string }> = [];
  for (const m of expr.matchAll(/\b((?:cpgw|process|nodejs)_[a-z0-9_]*)(\{[^}]*\})?/g))
    out.push({ name: m[1]!, matchers: m[2] ?? '' });
  return out;
}

/** Metric names a PromQL expression reads (identifiers followed by a selector or range). */
export function seriesIn(expr: string): string[] {
  const names = new Set<string>();
  for (const m of expr.matchAll(/\b([a-z_][a-z0-9_]*)\s*(?=\{|\[|\)|$|\s*[-+*/><=])/g)) {
    const name = m[1]!;
    if (/^(cpgw|process|nodejs)_/.test(name)) names.add(name);
  }
  return [...names];
}
