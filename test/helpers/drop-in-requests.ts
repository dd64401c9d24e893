// The drop-in request set (issue #18): every endpoint, valid and invalid inputs, then the GETs
// again (cache hits and negative hits must still answer as the upstream does). Shared by the
// side-by-side OpenAPI check and the Prism proxy check.
import { knownInns, personInns, unknownBic, unknownInn } from '../emulator/emulator-harness.ts';

/** One request of the set: a path, and for POST a body and headers. */
export interface Probe {
  path: string;
  method?: 'GET' | 'POST';
  body?: unknown;
  headers?: Record<string, string>;
}

export function requestSet(): Probe[] {
  const [inn1, inn2, inn3] = knownInns(3, 800);
  const [person] = personInns(1, 10);
  const check = (body: unknown, key?: string): Probe => ({
    path: '/v1/check',
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
  });
  const probes: Probe[] = [
    { path: '/v1/me' },
    { path: `/v1/companies/${inn1}` },
    { path: `/v1/companies/${inn1}/founders` },
    { path: `/v1/companies/${inn1}/arbitration` },
    { path: `/v1/companies/${inn1}/nope` },
    { path: `/v1/companies/${inn1}/arbitration?cursor=zzz` },
    { path: `/v1/companies/${unknownInn()}` },
    { path: '/v1/companies/123' },
    { path: '/v1/companies/7707083894' },
    { path: `/v1/requisites/${inn2}` },
    { path: '/v1/requisites/abc' },
    { path: '/v1/banks/044525225' },
    { path: `/v1/banks/${unknownBic()}` },
    { path: '/v1/banks/12' },
    { path: `/v1/persons/${person}` },
    { path: '/v1/persons/1' },
    { path: '/v1/suggest?q=%D0%A1%D0%B1%D0%B5%D1%80' },
    { path: '/v1/suggest?q=ab' },
    { path: '/v1/suggest' },
    { path: '/v1/search?q=%D0%A0%D0%BE%D0%BC%D0%B0%D1%88%D0%BA%D0%B0' },
    { path: '/v1/search?q=%D0%A0%D0%BE%D0%BC%D0%B0%D1%88%D0%BA%D0%B0&kind=companies&page=2' },
    { path: '/v1/search?q=abc&page=0' },
    { path: '/v1/search?q=abc&page=21' },
    { path: '/v1/search?q=abc&kind=planets' },
    { path: '/v1/search?q=abc&q=%D0%A1%D0%B1%D0%B5%D1%80' },
    { path: '/v1/checks/00000000-0000-4000-8000-000000000000' },
    check({ inn: inn3, purpose: 'requisites' }),
    check({ inn: '123' }),
    check({ inn: inn3, purpose: 'everything' }),
    check({}),
  ];
  // Repeats: cache hits and negative hits must still answer as the upstream does.
  return [...probes, ...probes.filter((p) => p.method !== 'POST')];
}
