// Bodies and requests for the response-cache tests: the emulator's real ~100 KB dossier and
// bank record, a fast dossier-like generator for volume tests, and request builders.
import { NO_DIRECTIVES, parseCacheControl, type RequestDirectives } from '../../src/cache/cache-control.ts';
import type { CacheRequest, UpstreamAnswer } from '../../src/cache/response-cache.ts';
import { createEmulatorData, type EmulatorData } from '../../src/emulator/data/index.ts';
import type { RouteName } from '../../src/route-table.ts';

export const INN = '7707083893';
export const OTHER_INN = '7736207543';
export const BIC = '044525225';
export const CHECK_ID = '1b4e28ba-2d11-41a5-9a6f-3c2c3b3f1a11';

let data: EmulatorData | undefined;
export function emulatorData(): EmulatorData {
  data ??= createEmulatorData();
  return data;
}

/** The emulator's dossier of `inn` as the upstream sends it (~100 KB). */
export function dossierBody(inn = INN): Buffer {
  const json = emulatorData().dossierJson(inn);
  if (json === null) throw new Error(`no dossier for ${inn}`);
  return Buffer.from(json);
}

export function bankBody(bic = BIC): Buffer {
  return Buffer.from(JSON.stringify(emulatorData().bank(bic)));
}

/** xorshift32: a tiny deterministic generator for fixture bodies. */
function xorshift(seed: number): (n: number) => number {
  let x = (seed * 2654435761) >>> 0 || 1;
  return (n) => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x % n;
  };
}

const WORDS = ['ООО', 'Ромашка', 'Север', 'Техно', 'Групп', 'Снаб', 'Строй', 'Инвест', 'Торг', 'Логистик'];

/** 1024 court-case items, serialized once; bodies pick from them. */
const CASE_POOL: readonly string[] = (() => {
  const rnd = xorshift(42);
  const name = (): string => `${WORDS[rnd(WORDS.length)]} ${WORDS[rnd(WORDS.length)]}-${rnd(1000)}`;
  const date = (): string =>
    `20${10 + rnd(16)}-${String(1 + rnd(12)).padStart(2, '0')}-${String(1 + rnd(28)).padStart(2, '0')}`;
  return Array.from({ length: 1024 }, () =>
    JSON.stringify({
      case_number: `А40-${rnd(300000)}/${20 + rnd(6)}`,
      court: 'Арбитражный суд города Москвы',
      role: ['plaintiff', 'defendant', 'third_party'][rnd(3)],
      role_title: ['Истец', 'Ответчик', 'Третье лицо'][rnd(3)],
      amount: `${rnd(10_000_000)}.${String(rnd(100)).padStart(2, '0')}`,
      filed_on: date(),
      status: ['open', 'closed'][rnd(2)],
      counterparty: { inn: String(7700000000 + rnd(99999999)), name: name() },
    }),
  );
})();

/**
 * A dossier-like JSON body of about `approxBytes` (UTF-8), distinct per `seed`: company block,
 * risk score and a page of court cases drawn from a fixed pool. Cheap enough to build 20,000.
 */
export function dossierLike(seed: number, approxBytes = 6000): Buffer {
  const rnd = xorshift(seed + 1);
  const inn = String(7700000000 + seed).padStart(10, '0');
  const company = JSON.stringify({
    inn,
    type: 'legal',
    ogrn: `10277${String(seed).padStart(8, '0')}`,
    kpp: '773601001',
    name: `${WORDS[rnd(WORDS.length)]} ${WORDS[rnd(WORDS.length)]}-${seed}`,
  });
  const score = `{"score":${rnd(100)},"risk_level":"${['low', 'medium', 'high'][rnd(3)]}"}`;
  const items: string[] = [];
  let length = company.length + score.length + 80;
  while (length < approxBytes) {
    const item = CASE_POOL[rnd(CASE_POOL.length)]!;
    items.push(item);
    length += Buffer.byteLength(item) + 1;
  }
  return Buffer.from(
    `{"found":true,"company":${company},"score":${score},"arbitration":{"items":[${items.join(',')}],"cursor":""}}`,
  );
}

export function notFoundBody(): Buffer {
  return Buffer.from(
    JSON.stringify({
      error: { code: 'not_found', message: 'No register knows this INN', details: {} },
      meta: { request_id: 'up-404' },
    }),
  );
}

export function errorBody(code: string): Buffer {
  return Buffer.from(
    JSON.stringify({ error: { code, message: code, details: {} }, meta: { request_id: 'x' } }),
  );
}

export function answer(status: number, body: Buffer, headers: Record<string, string> = {}): UpstreamAnswer {
  return {
    status,
    body,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'x-request-id': 'up-req-1',
      'x-charged-minor': '15000',
      'x-ratelimit-limit': '60',
      'x-ratelimit-remaining': '59',
      ...headers,
    },
  };
}

export interface RequestOptions {
  app?: string;
  cacheControl?: string;
  directives?: RequestDirectives;
  windowOpen?: boolean;
  query?: Record<string, string>;
  params?: Record<string, string>;
  inn?: string;
}

/** A cache request for `route`; params default to the usual INN / BIC / check id. */
export function request(route: RouteName, options: RequestOptions = {}): CacheRequest {
  const params: Record<string, string> =
    options.params ??
    (route === 'bank'
      ? { bic: BIC }
      : route === 'check_poll'
        ? { uuid: CHECK_ID }
        : route === 'section'
          ? { inn: INN, section: 'arbitration' }
          : route === 'suggest' || route === 'search'
            ? {}
            : { inn: INN });
  const req: CacheRequest = {
    route,
    params,
    query: options.query ?? (route === 'suggest' || route === 'search' ? { q: 'Ромашка' } : {}),
    app: options.app ?? 'crm',
    directives:
      options.directives ?? (options.cacheControl ? parseCacheControl(options.cacheControl) : NO_DIRECTIVES),
    windowOpen: options.windowOpen ?? false,
  };
  if (options.inn) req.inn = options.inn;
  return req;
}
