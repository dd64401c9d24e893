// The one field-name case of the JSON the gateway writes itself: snake_case, the upstream's
// (issue 31 item 11, README "Field names"). TypeScript types inside stay camelCase; an answer's
// keys are converted here, once, at the HTTP edge: server.ts runs snakeCaseKeys over every
// object fastify serializes (the admin API, the console's session, the envelope of every
// refusal), and the pipeline's own JSON (the `gateway` object of /v1/me) goes through it too. A
// route whose document has a vocabulary of its own (GET /admin/openapi.json: `requestBody`,
// `additionalProperties`) opts out with the route config `{ jsonKeys: 'verbatim' }`. Bodies the
// admin API accepts are snake_case too: unknownFields() refuses a camelCase spelling of a known
// field with a 422 that names the snake_case one, rather than ignoring it.
//
// Must never: rename a key that is data rather than a field name (an app, a route, a kind, a
// version, a hash: only keys shaped like a camelCase identifier are touched), or change a value.
import type { FieldProblem } from './errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** 'verbatim': this route's JSON keys are written as they are (not made snake_case). */
    jsonKeys?: 'verbatim';
  }
}

/** A camelCase identifier: a lowercase start, letters and digits, at least one capital. */
const CAMEL = /^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$/;

/** `limitMinor` → `limit_minor`, `upstreamURL` → `upstream_url`; any other key as it is. */
export function snakeKey(key: string): string {
  if (!CAMEL.test(key)) return key;
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z])([A-Z][a-z])/g, '$1_$2')
    .toLowerCase();
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * A JSON value with every camelCase key of its plain objects in snake_case, at any depth. Values,
 * and objects JSON.stringify writes its own way (Date, Buffer), are left as they are; an object
 * whose keys are all snake_case already is returned as it is (no copy).
 */
export function snakeCaseKeys(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const v = snakeCaseKeys(value[i]);
      if (v === value[i]) continue;
      out ??= value.slice();
      out[i] = v;
    }
    return out ?? value;
  }
  if (!isPlainObject(value)) return value;
  let changed = false;
  const entries: Array<[string, unknown]> = [];
  for (const [k, v] of Object.entries(value)) {
    const key = snakeKey(k);
    const inner = snakeCaseKeys(v);
    changed ||= key !== k || inner !== v;
    entries.push([key, inner]);
  }
  return changed ? Object.fromEntries(entries) : value;
}

/**
 * The fields of an accepted JSON body that are not among `known` (snake_case names), each a 422
 * problem: a camelCase spelling of a known field names the one to send, anything else is
 * unknown. Never ignored: an ignored filter or amount would change what the call does.
 */
export function unknownFields(
  body: Record<string, unknown>,
  known: readonly string[],
  what: string,
): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const key of Object.keys(body)) {
    if (known.includes(key)) continue;
    const snake = snakeKey(key);
    problems.push(
      known.includes(snake)
        ? {
            field: key,
            code: 'unknown_field',
            message: `${key} is not a ${what} field: field names are snake_case, send ${snake}`,
          }
        : { field: key, code: 'unknown_field', message: `${key} is not a ${what} field` },
    );
  }
  return problems;
}
