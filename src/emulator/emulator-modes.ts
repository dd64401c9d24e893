// The emulator's modes for what the spec leaves open (docs/upstream-gaps.md, "Modes"): whether
// a reused Idempotency-Key replays a stored error, null prices / wallet in /v1/me for a while,
// per-route latency, which window a requisites check leaves, which clock signs webhooks, and
// one section whose endpoint answer differs from the dossier's member (section_differs).
// One validator serves the CLI, the options and POST /_emulator/modes; the live values sit in
// one mutable object. It reads time only from the injected clock and chance only from the
// injected Random, so a seeded run draws the same latencies every time.
import type { Clock, Random } from '../clock.ts';
import { isSectionName, type SectionName } from '../domain/requests.ts';
import { FAULT_ROUTES } from './fault-injector.ts';

export const REPLAY_ERRORS = ['none', 'all'] as const;
export type ReplayErrors = (typeof REPLAY_ERRORS)[number];
export const REQUISITES_CHECK_WINDOWS = ['table', 'both', 'keep'] as const;
export type RequisitesCheckWindow = (typeof REQUISITES_CHECK_WINDOWS)[number];
export const WEBHOOK_CLOCKS = ['real', 'emulator'] as const;
export type WebhookClock = (typeof WEBHOOK_CLOCKS)[number];
/** Routes a latency can be set for (`*` = every route without its own entry). */
export const LATENCY_ROUTES = FAULT_ROUTES;

export interface LatencyRange {
  minMs: number;
  maxMs: number;
}

/** The mode options as EmulatorOptions takes them (all optional). */
export interface ModeOptions {
  /** `none`: an error answer releases the key (default); `all`: it is replayed for the key's day. */
  replayErrors?: ReplayErrors;
  /** /v1/me answers `prices: null` for this many seconds of emulator time after start/reset. */
  nullPricesSeconds?: number;
  /** /v1/me answers `wallet: null` for this many seconds of emulator time after start/reset. */
  nullWalletSeconds?: number;
  /** ROUTE -> `MS` or `MIN-MAX` (a string), a number of ms, or a range. */
  latency?: Record<string, string | number | LatencyRange>;
  /** What a finished `purpose: requisites` check does to the company's window (default `table`). */
  requisitesCheckWindow?: RequisitesCheckWindow;
  /** Which clock gives webhook `t=` (default `real`). */
  webhookClock?: WebhookClock;
  /**
   * This section's endpoint answers a shape that differs from the dossier's member (an extra
   * field, or an array answered as a page); null/'' = none (default). Tests the gateway's
   * section/dossier equivalence learning.
   */
  sectionDiffers?: SectionName | '' | null;
}

export interface ResolvedModes {
  replayErrors: ReplayErrors;
  nullPricesSeconds: number;
  nullWalletSeconds: number;
  latency: Record<string, LatencyRange>;
  requisitesCheckWindow: RequisitesCheckWindow;
  webhookClock: WebhookClock;
  sectionDiffers: SectionName | null;
}

export const DEFAULT_MODES: ResolvedModes = {
  replayErrors: 'none',
  nullPricesSeconds: 0,
  nullWalletSeconds: 0,
  latency: {},
  requisitesCheckWindow: 'table',
  webhookClock: 'real',
  sectionDiffers: null,
};

/** `500` or `500-3000` (ms, integers, min <= max); a string describing the problem otherwise. */
export function parseLatency(value: string | number | LatencyRange): LatencyRange | string {
  if (typeof value === 'object' && value !== null) return checkRange(value.minMs, value.maxMs);
  const text = String(value).trim();
  const match = /^(\d+)(?:-(\d+))?$/.exec(text);
  if (!match) return `latency "${text}" must be MS or MIN-MAX (whole milliseconds)`;
  const min = Number(match[1]);
  return checkRange(min, match[2] === undefined ? min : Number(match[2]));
}

function checkRange(minMs: number, maxMs: number): LatencyRange | string {
  if (!Number.isSafeInteger(minMs) || !Number.isSafeInteger(maxMs) || minMs < 0 || maxMs < minMs) {
    return `latency ${minMs}-${maxMs} must be whole milliseconds with 0 <= MIN <= MAX`;
  }
  return { minMs, maxMs };
}

function oneOf<T extends string>(
  problems: string[],
  name: string,
  allowed: readonly T[],
  value: unknown,
  fallback: T,
): T {
  if (value === undefined) return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  problems.push(`${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
  return fallback;
}

function seconds(problems: string[], name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    problems.push(`${name} must be a non-negative number of seconds`);
    return fallback;
  }
  return value;
}

/** Validates `options` over `base`; problems are pushed, never thrown. */
export function resolveModes(
  options: ModeOptions,
  problems: string[],
  base: ResolvedModes = DEFAULT_MODES,
): ResolvedModes {
  let latency = base.latency;
  if (options.latency !== undefined) {
    latency = {};
    for (const [route, value] of Object.entries(options.latency)) {
      if (!(LATENCY_ROUTES as readonly string[]).includes(route)) {
        problems.push(`latency route "${route}" must be one of ${LATENCY_ROUTES.join(', ')}`);
        continue;
      }
      const range = parseLatency(value);
      if (typeof range === 'string') problems.push(range);
      else latency[route] = range;
    }
  }
  return {
    replayErrors: oneOf(problems, 'replay-errors', REPLAY_ERRORS, options.replayErrors, base.replayErrors),
    nullPricesSeconds: seconds(
      problems,
      'null-prices-seconds',
      options.nullPricesSeconds,
      base.nullPricesSeconds,
    ),
    nullWalletSeconds: seconds(
      problems,
      'null-wallet-seconds',
      options.nullWalletSeconds,
      base.nullWalletSeconds,
    ),
    latency,
    requisitesCheckWindow: oneOf(
      problems,
      'requisites-check-window',
      REQUISITES_CHECK_WINDOWS,
      options.requisitesCheckWindow,
      base.requisitesCheckWindow,
    ),
    webhookClock: oneOf(problems, 'webhook-clock', WEBHOOK_CLOCKS, options.webhookClock, base.webhookClock),
    sectionDiffers: sectionName(problems, options.sectionDiffers, base.sectionDiffers),
  };
}

function sectionName(problems: string[], value: unknown, fallback: SectionName | null): SectionName | null {
  if (value === undefined) return fallback;
  if (value === null || value === '') return null;
  if (typeof value === 'string' && isSectionName(value)) return value;
  problems.push(`section-differs must be one of the 28 section names or empty, got ${JSON.stringify(value)}`);
  return fallback;
}

/** `ROUTE=MS` / `ROUTE=MIN-MAX` items (CLI) into the latency option; problems pushed. */
export function parseLatencyFlags(items: string[], problems: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items) {
    const at = item.indexOf('=');
    if (at <= 0) {
      problems.push(`--latency "${item}" must be ROUTE=MS or ROUTE=MIN-MAX`);
      continue;
    }
    out[item.slice(0, at)] = item.slice(at + 1);
  }
  return out;
}

/** The live modes of one emulator. */
export class EmulatorModes {
  private modes: ResolvedModes;
  private nullPricesUntil = 0;
  private nullWalletUntil = 0;

  constructor(
    initial: ResolvedModes,
    private readonly clock: Clock,
    private readonly random: Random,
  ) {
    this.modes = initial;
    this.restart();
  }

  get current(): ResolvedModes {
    return this.modes;
  }

  /** Applies a validated change; a null-seconds value given starts counting again from now. */
  change(options: ModeOptions): ResolvedModes {
    const problems: string[] = [];
    const next = resolveModes(options, problems, this.modes);
    if (problems.length) throw new Error(problems.join('; '));
    this.modes = next;
    const now = this.clock.now();
    if (options.nullPricesSeconds !== undefined) this.nullPricesUntil = now + next.nullPricesSeconds * 1000;
    if (options.nullWalletSeconds !== undefined) this.nullWalletUntil = now + next.nullWalletSeconds * 1000;
    return next;
  }

  /** The null periods count from now again (start and reset). */
  restart(): void {
    const now = this.clock.now();
    this.nullPricesUntil = now + this.modes.nullPricesSeconds * 1000;
    this.nullWalletUntil = now + this.modes.nullWalletSeconds * 1000;
  }

  pricesKnown(): boolean {
    return this.clock.now() >= this.nullPricesUntil;
  }

  walletKnown(): boolean {
    return this.clock.now() >= this.nullWalletUntil;
  }

  /** One draw of the route's latency in ms (0 when none is set), uniform over MIN..MAX. */
  latencyMs(route: string): number {
    const range = this.modes.latency[route] ?? this.modes.latency['*'];
    if (!range) return 0;
    if (range.maxMs === range.minMs) return range.minMs;
    return range.minMs + Math.floor(this.random() * (range.maxMs - range.minMs + 1));
  }

  /** GET /_emulator/modes. */
  snapshot(): Record<string, unknown> {
    const latency: Record<string, string> = {};
    for (const [route, r] of Object.entries(this.modes.latency)) {
      latency[route] = r.minMs === r.maxMs ? String(r.minMs) : `${r.minMs}-${r.maxMs}`;
    }
    return {
      replay_errors: this.modes.replayErrors,
      null_prices_seconds: this.modes.nullPricesSeconds,
      null_wallet_seconds: this.modes.nullWalletSeconds,
      prices_known: this.pricesKnown(),
      wallet_known: this.walletKnown(),
      latency,
      requisites_check_window: this.modes.requisitesCheckWindow,
      webhook_clock: this.modes.webhookClock,
      section_differs: this.modes.sectionDiffers,
    };
  }
}

/** POST /_emulator/modes body (snake_case, as the rest of the control API) into ModeOptions. */
export function modeOptionsFromBody(body: Record<string, unknown>, problems: string[]): ModeOptions {
  const names: Record<string, keyof ModeOptions> = {
    replay_errors: 'replayErrors',
    null_prices_seconds: 'nullPricesSeconds',
    null_wallet_seconds: 'nullWalletSeconds',
    latency: 'latency',
    requisites_check_window: 'requisitesCheckWindow',
    webhook_clock: 'webhookClock',
    section_differs: 'sectionDiffers',
  };
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(body)) {
    const option = names[name];
    if (!option) {
      problems.push(`unknown mode ${name}; known: ${Object.keys(names).join(', ')}`);
      continue;
    }
    if (option === 'latency' && (value === null || typeof value !== 'object' || Array.isArray(value))) {
      problems.push('latency must be an object {ROUTE: "MS" | "MIN-MAX"}');
      continue;
    }
    out[option] = value;
  }
  return out as ModeOptions;
}
