// A typed client of counterparty-gateway: every path, parameter, body and answer below is
// checked by TypeScript against src/gateway.d.ts, generated from the gateway's own OpenAPI
// document (scripts/generate.mjs). It reads the app's budgets from GET /v1/me, then the dossier
// of each INN given, and handles the gateway's 402 budget_exceeded with its typed details.
//
//   CPGW_TOKEN=<app token> node dist/main.js <gateway base URL> <inn> [<inn> ...]
//
// Exit 0 when every company was read or refused for its budget; 1 on any other error.
import createClient from 'openapi-fetch';
import type { components, paths } from './gateway.js';

type GatewayError = components['schemas']['Error'];
type Budget = NonNullable<NonNullable<components['schemas']['Me']['gateway']>['budgets']>[number];

const [baseUrl, ...inns] = process.argv.slice(2);
const token = process.env.CPGW_TOKEN;
if (!baseUrl || inns.length === 0 || !token) {
  console.error('usage: CPGW_TOKEN=<app token> node dist/main.js <gateway base URL> <inn> [<inn> ...]');
  process.exit(2);
}

const client = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${token}` } });

const cap = (minor: number | null | undefined) => (minor == null ? 'none' : `${minor} kopecks`);
const budgetLine = (b: Budget) =>
  `budget ${b.scope}/${b.period} ${b.period_id}: spent ${b.spent_minor}, held ${b.reserved_minor}, cap ${cap(b.limit_minor)}`;

/** The refusal as a line; only a budget refusal is an expected outcome here. */
function refusalLine(inn: string, status: number, body: GatewayError): { line: string; expected: boolean } {
  const { code, message, details } = body.error;
  if (status === 402 && code === 'budget_exceeded') {
    // Typed from the gateway's document, in its field names.
    const { scope, period, limit_minor, spent_minor, reserved_minor, estimate_minor } = details;
    return {
      line:
        `company ${inn}: refused, budget_exceeded (${scope}/${period}): cap ${cap(limit_minor)}, ` +
        `spent ${spent_minor}, held ${reserved_minor}, this call ${estimate_minor} kopecks`,
      expected: true,
    };
  }
  return { line: `company ${inn}: ${status} ${code}: ${message} (${body.meta.request_id})`, expected: false };
}

let failed = false;

const me = await client.GET('/v1/me');
if (!me.data) {
  console.error(`GET /v1/me: ${me.response.status} ${me.error?.error.code ?? ''}`);
  process.exit(1);
}
const gateway = me.data.gateway;
console.log(`app ${gateway?.app ?? '?'} (budgets in ${gateway?.time_zone ?? '?'})`);
for (const b of gateway?.budgets ?? []) console.log(budgetLine(b));

for (const inn of inns) {
  const { data, error, response } = await client.GET('/v1/companies/{inn}', {
    params: { path: { inn }, header: { 'X-Max-Wait-Ms': 5_000 } },
  });
  if (data) {
    const charged = response.headers.get('x-charged-minor') ?? '0';
    const cache = response.headers.get('x-cache') ?? '-';
    console.log(
      `company ${inn}: ogrn ${data.company?.ogrn ?? '-'}, charged ${charged} kopecks (X-Cache ${cache})`,
    );
    continue;
  }
  const { line, expected } = refusalLine(inn, response.status, error);
  console.log(line);
  failed ||= !expected;
}
process.exit(failed ? 1 : 0);
