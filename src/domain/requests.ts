// The upstream's request rules in one place: section names, query limits, enumerations and
// the validators that turn a bad input into validation_failed field problems. The emulator
// and the gateway's local validation both call these.
import type { FieldProblem } from '../errors.ts';
import { innProblem, isValidBic } from './identifiers.ts';

export const SECTION_NAMES = [
  'company',
  'score',
  'activities',
  'management',
  'founders',
  'branches',
  'financials',
  'statements',
  'annual',
  'taxes',
  'flags',
  'procurements',
  'procurement_summary',
  'customer_procurements',
  'customer_procurement_summary',
  'procurement_contacts',
  'arbitration',
  'bankruptcy',
  'rnp',
  'disqualifications',
  'licenses',
  'relations',
  'neighbors',
  'history',
  'egrul_rows',
  'documents',
  'sources',
  'publication_dates',
] as const;
export type SectionName = (typeof SECTION_NAMES)[number];
const SECTION_SET: ReadonlySet<string> = new Set(SECTION_NAMES);
export function isSectionName(name: string): name is SectionName {
  return SECTION_SET.has(name);
}

export const SEARCH_KINDS = ['all', 'companies', 'entrepreneurs', 'persons'] as const;
export type SearchKind = (typeof SEARCH_KINDS)[number];
export const CHECK_PURPOSES = ['dossier', 'requisites'] as const;
export type CheckPurpose = (typeof CHECK_PURPOSES)[number];

export const LIMITS = {
  qMin: 3,
  qMax: 200,
  pageMin: 1,
  pageMax: 20,
  idempotencyKeyMax: 64,
  suggestItems: 10,
} as const;

const INN_MESSAGES = {
  format: 'INN must be 10 digits (legal entity) or 12 digits (sole proprietor or person)',
  checksum: 'INN check digits do not match',
  all_zero: 'INN must not be all zeros',
} as const;

export function checkInn(inn: string, field = 'inn'): FieldProblem[] {
  const problem = innProblem(inn);
  return problem ? [{ field, code: `invalid_${problem}`, message: INN_MESSAGES[problem] }] : [];
}

export function checkBic(bic: string): FieldProblem[] {
  return isValidBic(bic)
    ? []
    : [{ field: 'bic', code: 'invalid_format', message: 'BIC must be nine digits' }];
}

export function checkQuery(q: unknown): FieldProblem[] {
  if (typeof q !== 'string' || q.length === 0) {
    return [{ field: 'q', code: 'required', message: 'q is required' }];
  }
  const length = [...q].length;
  if (length < LIMITS.qMin || length > LIMITS.qMax) {
    return [
      {
        field: 'q',
        code: 'invalid_length',
        message: `q must be ${LIMITS.qMin} to ${LIMITS.qMax} characters`,
      },
    ];
  }
  return [];
}

export function checkPage(page: unknown): FieldProblem[] {
  if (page === undefined) return [];
  if (
    typeof page !== 'string' ||
    !/^\d+$/.test(page) ||
    Number(page) < LIMITS.pageMin ||
    Number(page) > LIMITS.pageMax
  ) {
    return [
      {
        field: 'page',
        code: 'out_of_range',
        message: `page must be an integer ${LIMITS.pageMin} to ${LIMITS.pageMax}`,
      },
    ];
  }
  return [];
}

export function checkKind(kind: unknown): FieldProblem[] {
  if (kind === undefined) return [];
  return typeof kind === 'string' && (SEARCH_KINDS as readonly string[]).includes(kind)
    ? []
    : [{ field: 'kind', code: 'invalid_value', message: `kind must be one of ${SEARCH_KINDS.join(', ')}` }];
}

export function checkIdempotencyKey(key: string | undefined): FieldProblem[] {
  if (key === undefined) return [];
  if (key.length === 0 || key.length > LIMITS.idempotencyKeyMax) {
    return [
      {
        field: 'Idempotency-Key',
        code: 'invalid_length',
        message: `Idempotency-Key must be 1 to ${LIMITS.idempotencyKeyMax} characters`,
      },
    ];
  }
  return [];
}

export interface CheckBody {
  inn: string;
  purpose: CheckPurpose;
}

/** Validates a POST /v1/check body already parsed from JSON (undefined = no or unparsable body). */
export function checkCheckBody(body: unknown): { value?: CheckBody; problems: FieldProblem[] } {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return { problems: [{ field: 'body', code: 'invalid_json', message: 'Body must be a JSON object' }] };
  }
  const { inn, purpose } = body as Record<string, unknown>;
  const problems: FieldProblem[] = [];
  if (typeof inn !== 'string') problems.push({ field: 'inn', code: 'required', message: 'inn is required' });
  else problems.push(...checkInn(inn));
  if (
    purpose !== undefined &&
    !(typeof purpose === 'string' && (CHECK_PURPOSES as readonly string[]).includes(purpose))
  ) {
    problems.push({
      field: 'purpose',
      code: 'invalid_value',
      message: 'purpose must be dossier or requisites',
    });
  }
  if (problems.length) return { problems };
  return {
    value: { inn: inn as string, purpose: (purpose as CheckPurpose | undefined) ?? 'dossier' },
    problems,
  };
}

/**
 * Query parameters as the upstream reads them: a repeated name (`q=abc&q=Сбер`, `page=1&page=2`)
 * takes its LAST value. Validation, cache keys and the forwarded query (sent as received) then
 * agree with the upstream.
 */
export function lastQueryValues(query: unknown): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    const last = Array.isArray(value) ? value.at(-1) : value;
    out[name] = typeof last === 'string' ? last : last === undefined ? undefined : String(last);
  }
  return out;
}

/** Parses a JSON request body; `undefined` when absent or not JSON (validation then reports it). */
export function parseJsonBody(raw: Buffer | undefined): unknown {
  if (!raw || raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return undefined;
  }
}
