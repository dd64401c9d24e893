// The classes the limiter keeps in the Store's sliding logs, as typed values, and the ONE place
// that turns them into the strings the Store sees and back:
//
//   { kind: 'class', cls: 'search' }                 "search"             the class itself
//   { kind: 'pace', cls: 'search' }                  "search:pace"        its pacing
//   { kind: 'cap', cls: 'search', app: 'crm' }       "search@crm"         an app's own cap
//   { kind: 'share', cls: 'search', app: 'crm' }     "search@crm:share"   an app's fair share
//   { kind: 'waiting', cls: 'search', app: 'crm' }   "search@crm:waiting" who waits (fair-share.ts)
//   { kind: 'refused', cls: 'search', app: 'crm' }   "search@crm:refused" who was refused it lately
//   { kind: 'minute', resetAtMs: 1768467660000 }     "key~1768467660000"  the upstream's minute cap
//
// Pure: no clock, no I/O. Must never be bypassed: no other module builds or parses these strings.
import type { LimitClassSpec } from '../store/store.ts';
import { LIMIT_CLASS_NAMES, type LimitClassName } from './limit-classes.ts';

export type StoreClass =
  | { readonly kind: 'class' | 'pace'; readonly cls: LimitClassName }
  | {
      readonly kind: 'cap' | 'share' | 'waiting' | 'refused';
      readonly cls: LimitClassName;
      readonly app: string;
    }
  | { readonly kind: 'minute'; readonly resetAtMs: number };

export type StoreClassKind = StoreClass['kind'];

/** One store class with its limit: what a take sends (`name` is always the encoder's string). */
export interface ClassSpec extends LimitClassSpec {
  readonly cls: StoreClass;
}

export function classSpec(cls: StoreClass, limit: number, windowMs: number): ClassSpec {
  return { cls, name: encodeStoreClass(cls), limit, windowMs };
}

/** The string form the Store keeps (its log's name). */
export function encodeStoreClass(c: StoreClass): string {
  switch (c.kind) {
    case 'class':
      return c.cls;
    case 'pace':
      return `${c.cls}:pace`;
    case 'cap':
      return `${c.cls}@${c.app}`;
    case 'share':
      return `${c.cls}@${c.app}:share`;
    case 'waiting':
      return `${c.cls}@${c.app}:waiting`;
    case 'refused':
      return `${c.cls}@${c.app}:refused`;
    case 'minute':
      return `key~${c.resetAtMs}`;
    default: {
      const unknown: never = c;
      throw new TypeError(`unknown store class ${JSON.stringify(unknown)}`);
    }
  }
}

const APP_SUFFIXES = { ':share': 'share', ':waiting': 'waiting', ':refused': 'refused' } as const;

/** The typed class of a Store log name; null for a name the limiter never writes. */
export function decodeStoreClass(name: string): StoreClass | null {
  if (name.startsWith('key~')) {
    const resetAtMs = Number(name.slice(4));
    return name.length > 4 && Number.isSafeInteger(resetAtMs) ? { kind: 'minute', resetAtMs } : null;
  }
  const at = name.indexOf('@');
  if (at < 0) {
    if (name.endsWith(':pace')) {
      const cls = classNamed(name.slice(0, -':pace'.length));
      return cls ? { kind: 'pace', cls } : null;
    }
    const cls = classNamed(name);
    return cls ? { kind: 'class', cls } : null;
  }
  const cls = classNamed(name.slice(0, at));
  if (!cls) return null;
  let app = name.slice(at + 1);
  let kind: 'cap' | 'share' | 'waiting' | 'refused' = 'cap';
  for (const [suffix, k] of Object.entries(APP_SUFFIXES)) {
    if (app.endsWith(suffix)) {
      app = app.slice(0, -suffix.length);
      kind = k;
      break;
    }
  }
  return app.length > 0 ? { kind, cls, app } : null;
}

/** The limit class a store class belongs to ("search@crm:share" -> search; the minute cap -> key). */
export function baseClassOf(c: StoreClass): LimitClassName {
  return c.kind === 'minute' ? 'key' : c.cls;
}

/** A class of one app (its cap or its share): refusing it blocks that app only. */
export function isAppClass(c: StoreClass): c is Extract<StoreClass, { app: string }> {
  return c.kind === 'cap' || c.kind === 'share' || c.kind === 'waiting' || c.kind === 'refused';
}

/** A log that is a hint between replicas (shares, who waits, who was refused), never a limit. */
export function isHintClass(c: StoreClass): boolean {
  return c.kind === 'share' || c.kind === 'waiting' || c.kind === 'refused';
}

/** The limit class of a Store log name, for refusals read back from the Store ('key' if unknown). */
export function baseClassOfName(name: string): LimitClassName {
  const c = decodeStoreClass(name);
  return c ? baseClassOf(c) : 'key';
}

function classNamed(s: string): LimitClassName | null {
  return (LIMIT_CLASS_NAMES as readonly string[]).includes(s) ? (s as LimitClassName) : null;
}
