// Fault injection for tests (POST /_emulator/faults): the next N calls of a route fail with
// 502 source_unavailable or 503 billing_unavailable, are delayed, or lose their connection
// after the charge is recorded. Faults are consumed in the order they were added.

export const FAULT_ROUTES = [
  '*',
  'me',
  'company',
  'section',
  'check',
  'check_poll',
  'requisites',
  'bank',
  'person',
  'suggest',
  'search',
] as const;
export type FaultRoute = (typeof FAULT_ROUTES)[number];

export interface Fault {
  route: FaultRoute;
  count: number;
  status?: 502 | 503;
  latency_ms?: number;
  drop_after_charge?: boolean;
}

export type FaultEffect = Omit<Fault, 'count' | 'route'>;

export function parseFault(body: unknown): { fault?: Fault; problems: string[] } {
  const problems: string[] = [];
  if (!body || typeof body !== 'object' || Array.isArray(body))
    return { problems: ['body must be a JSON object'] };
  const b = body as Record<string, unknown>;
  const route = b.route ?? '*';
  if (typeof route !== 'string' || !(FAULT_ROUTES as readonly string[]).includes(route)) {
    problems.push(`route must be one of ${FAULT_ROUTES.join(', ')}`);
  }
  const count = b.count ?? 1;
  if (!Number.isSafeInteger(count) || (count as number) < 1)
    problems.push('count must be a positive integer');
  if (b.status !== undefined && b.status !== 502 && b.status !== 503)
    problems.push('status must be 502 or 503');
  if (b.latency_ms !== undefined && (typeof b.latency_ms !== 'number' || b.latency_ms < 0)) {
    problems.push('latency_ms must be a non-negative number');
  }
  if (b.drop_after_charge !== undefined && typeof b.drop_after_charge !== 'boolean') {
    problems.push('drop_after_charge must be a boolean');
  }
  if (b.status === undefined && b.latency_ms === undefined && b.drop_after_charge !== true) {
    problems.push('give at least one of status, latency_ms, drop_after_charge');
  }
  if (problems.length) return { problems };
  const fault: Fault = { route: route as FaultRoute, count: count as number };
  if (b.status !== undefined) fault.status = b.status as 502 | 503;
  if (b.latency_ms !== undefined) fault.latency_ms = b.latency_ms as number;
  if (b.drop_after_charge === true) fault.drop_after_charge = true;
  return { fault, problems };
}

export class FaultInjector {
  private faults: Fault[] = [];

  add(fault: Fault): void {
    this.faults.push({ ...fault });
  }

  /** Consumes one matching fault for a call of `route`, or null. */
  take(route: string): FaultEffect | null {
    const index = this.faults.findIndex((f) => f.route === '*' || f.route === route);
    if (index < 0) return null;
    const fault = this.faults[index]!;
    fault.count -= 1;
    if (fault.count <= 0) this.faults.splice(index, 1);
    const { count: _count, route: _route, ...effect } = fault;
    return effect;
  }

  list(): Fault[] {
    return this.faults.map((f) => ({ ...f }));
  }

  reset(): void {
    this.faults = [];
  }
}
