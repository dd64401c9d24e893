// Stage: sections from the cached dossier (issue #14). Runs after the cache stage, on its MISS.
//
//   serve     A first-page section read whose company window is closed (so the read would be
//             charged), when the company's dossier is cached and fresh enough for this caller
//             and the section is known equivalent (src/cache/section-verdicts.ts): answered from
//             the dossier's member, X-Cache: DERIVED, no upstream call, no charge.
//   learn     A section answer fetched inside an open window while the dossier cached in that
//             same window is at hand (or a dossier answer while that window's sections are
//             cached): compared (src/cache/section-equivalence.ts) and recorded, shared by replicas.
//   prefetch  A paid section read opened a window and no fresh dossier is cached: the gateway
//             reads the dossier inside that window (free) as its own call ("_gateway", a short
//             queue wait, skipped when the key class is nearly saturated), saves it to the cache
//             and compares the section answer with its member. One replica per company per window.
//
// Inside an open window a section read goes upstream (it is free and it is evidence).
//
// Must never: derive a later page (cursor), a member the dossier does not carry whole, a section
// never found equal or ever found different (unless pinned on), or from a dossier older than the
// caller accepts; send the prefetch outside an open window; make the app wait for the prefetch.

import { maxAgeFor } from '../../cache/cache-config.ts';
import { decompressBody } from '../../cache/content-coding.ts';
import { decide } from '../../cache/freshness.ts';
import { type CacheEntry, NO_DIRECTIVES } from '../../cache/index.ts';
import { compareSection, derivableMember, memberOf } from '../../cache/section-equivalence.ts';
import { isSectionName, SECTION_NAMES, type SectionName } from '../../domain/requests.ts';
import { sentOrThrow } from '../../upstream/governed-upstream.ts';
import type { RequestContext } from '../context.ts';
import type { PipelineDeps } from '../deps.ts';
import { type Answer, isAnswer } from '../outcome.ts';
import type { StageFactory } from '../stage.ts';

/** The gateway's own calls spend the shared budget under this name (as the price book's). */
const GATEWAY_APP = '_gateway';
/** The prefetch waits at most this long for a rate slot, then gives up (low priority). */
const PREFETCH_MAX_WAIT_MS = 1_000;
/** The prefetch is skipped when fewer than this share of the key class's slots remain. */
export const PREFETCH_RESERVE = 0.25;

/** What this stage uses of PipelineDeps. */
export type DeriveDeps = Pick<
  PipelineDeps,
  'cache' | 'clock' | 'config' | 'limits' | 'logger' | 'metrics' | 'sections' | 'upstream' | 'windows'
>;

export const derive: StageFactory<DeriveDeps> = (deps) => {
  const sections = deps.sections;
  if (!sections) return (_ctx, next) => next();
  const windowMs = deps.windows.until(0);

  const dossierEntry = (inn: string) =>
    deps.cache.peek({ route: 'company', params: { inn }, query: {} }).catch(() => null);

  /** Start of the company's current dossier window, or null when none is open. */
  const windowStart = (ctx: RequestContext): number | null => {
    if (!ctx.windowCovered || !ctx.windows) return null;
    return ctx.windows.dossierUntil - windowMs;
  };

  async function tryDerive(ctx: RequestContext, inn: string, section: SectionName): Promise<Answer | null> {
    if (!(await sections!.derivable(section))) return null;
    const entry = await dossierEntry(inn);
    if (entry?.status !== 200) return null;
    const ageMs = Math.max(0, deps.clock.now() - entry.storedAt);
    const verdict = decide({
      ageMs,
      lifetimeMs: maxAgeFor(deps.config.cache, 'dossier', ctx.app?.name),
      directives: ctx.directives,
      windowOpen: false,
      windowed: true,
      windowRefreshAfterMs: null,
    });
    if (!verdict.serve || verdict.stale) return null;
    const member = derivableMember(parseEntry(entry), section);
    if (member === undefined) return null;
    const saved = deps.metrics.directCost(ctx, false);
    deps.metrics.saved(ctx, 'derived', saved);
    sections!.counters.derived++;
    sections!.counters.derivedSavedMinor += saved;
    return {
      status: 200,
      headers: {
        'content-type': entry.headers['content-type'] ?? 'application/json; charset=utf-8',
        age: String(Math.floor(ageMs / 1000)),
        vary: 'Accept-Encoding',
      },
      body: Buffer.from(JSON.stringify(member), 'utf8'),
      cache: 'DERIVED',
      chargedMinor: 0,
    };
  }

  /** A first-page section answer from upstream: evidence, or a dossier prefetch. */
  async function afterSection(ctx: RequestContext, inn: string, section: SectionName, out: Answer) {
    const body = out.body;
    const start = windowStart(ctx);
    if (start !== null) {
      const entry = await dossierEntry(inn);
      if (entry && entry.status === 200 && entry.storedAt >= start)
        await learn(section, parseJson(body), parseEntry(entry));
      return;
    }
    if ((out.chargedMinor ?? 0) > 0 && deps.config.cache.prefetchDossier) {
      const entry = await dossierEntry(inn);
      const dossierMaxAge = maxAgeFor(deps.config.cache, 'dossier', null);
      if (entry?.status === 200 && deps.clock.now() - entry.storedAt < dossierMaxAge) return;
      // Not awaited: the app has its answer; the prefetch is the gateway's own business.
      void prefetch(ctx, inn, section, body).catch((err: unknown) => {
        sections!.counters.prefetches.failed++;
        deps.logger.warn({ err: (err as Error).message, inn }, 'dossier prefetch failed');
      });
    }
  }

  async function prefetch(ctx: RequestContext, inn: string, section: SectionName, sectionBody: Buffer) {
    // The window the section's charge opened is in the store once its record is (stages/record.ts:
    // a gateway-keyed charge is recorded after the answer).
    if (ctx.settling) await ctx.settling;
    const windows = await deps.windows.get(inn);
    if (!deps.windows.covers(windows, 'dossier')) return;
    const room = await deps.limits.headroomFor(GATEWAY_APP, 'company');
    if (!room || room.remaining < Math.max(1, Math.ceil(room.limit * PREFETCH_RESERVE))) {
      sections!.counters.prefetches.skippedSaturated++;
      return;
    }
    const until = deps.windows.expiry(windows, 'dossier') - deps.clock.now();
    if (!(await sections!.claimPrefetch(inn, ctx.requestId, Math.max(1, until)))) return;
    // Not started (the rate queue refused): a failed prefetch.
    const res = sentOrThrow(
      await deps.upstream.request({
        app: GATEWAY_APP,
        route: 'company',
        maxWaitMs: PREFETCH_MAX_WAIT_MS,
        method: 'GET',
        path: `/v1/companies/${inn}`,
        headers: { accept: 'application/json' },
        timeoutMs: ctx.timeoutMs || deps.config.upstream.timeoutMs,
      }),
    );
    const charged = Number(res.headers['x-charged-minor'] ?? 0);
    if (charged > 0) {
      // The window was judged open with the safety margin; the upstream disagreed.
      sections!.counters.prefetches.charged += charged;
      deps.logger.error({ inn, charged }, 'dossier prefetch was charged (window judged open)');
    }
    if (res.status !== 200) {
      sections!.counters.prefetches.failed++;
      return;
    }
    await deps.cache.save(
      { route: 'company', params: { inn }, query: {}, app: null, directives: NO_DIRECTIVES },
      res,
    );
    await learn(section, parseJson(sectionBody), parseJson(res.body));
    sections!.counters.prefetches.fetched++;
  }

  /** A dossier answer fetched inside an open window: compare the sections cached in it. */
  async function afterDossier(ctx: RequestContext, inn: string, body: Buffer) {
    const start = windowStart(ctx);
    if (start === null) return;
    // The dossier (~100 KB) is parsed only when a section of this window is cached to compare:
    // on most dossier reads none is, and parsing would add ~2 ms to the answer.
    // One store read for the 26 sections (one round trip: they share the company's slot).
    const entries = await deps.cache.peekMany(
      SECTION_NAMES.map((section) => ({ route: 'section' as const, params: { inn, section }, query: {} })),
    );
    let dossier: unknown;
    let parsed = false;
    await Promise.all(
      SECTION_NAMES.map(async (section, i) => {
        const entry = entries[i];
        if (entry?.status !== 200 || entry.storedAt < start) return;
        if (!parsed) {
          dossier = parseJson(body);
          parsed = true;
        }
        await learn(section, parseEntry(entry), dossier);
      }),
    );
  }

  async function learn(section: SectionName, answer: unknown, dossier: unknown) {
    if (answer === undefined || dossier === undefined) return;
    await sections!.record(section, compareSection(answer, memberOf(dossier, section)));
  }

  return async (ctx, next) => {
    const name = ctx.route.name;
    if ((name !== 'section' && name !== 'company') || ctx.policy === null || !ctx.shape) return next();
    const inn = ctx.shape.inn;
    const section = ctx.call.params.section;
    const firstPage = ctx.call.query.cursor === undefined;
    if (name === 'section' && section && isSectionName(section) && firstPage && !ctx.windowCovered) {
      const derived = await tryDerive(ctx, inn, section);
      if (derived) return derived;
    }
    const out = await next();
    if (!isAnswer(out) || out.status !== 200 || out.cache === 'COALESCED') return out;
    const failed = (err: unknown) =>
      deps.logger.warn({ err: (err as Error).message }, 'section/dossier comparison failed');
    try {
      // A dossier's comparison with the sections of its window changes nothing in its answer:
      // made after it is written (the next turn of the event loop), off its path.
      if (name === 'company') setImmediate(() => void afterDossier(ctx, inn, out.body).catch(failed));
      else if (section && isSectionName(section) && firstPage) await afterSection(ctx, inn, section, out);
    } catch (err) {
      failed(err);
    }
    return out;
  };
};

function parseEntry(entry: CacheEntry): unknown {
  return parseJson(decompressBody(entry.body, entry.encoding));
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}
