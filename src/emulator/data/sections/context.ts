// What a section generator receives, and what it returns. Each section draws from its own
// PRNG stream (seed|inn|section) so sections never shift one another.
import type { CompanyCore } from '../core.ts';
import { Rng } from '../prng.ts';
import type { Universe } from '../universe.ts';

export interface SectionContext {
  seed: string;
  core: CompanyCore;
  universe: Universe;
}

/** A paged section keeps all its items (served 100 a page); any other is served whole. */
export type SectionContent = { paged: true; items: unknown[] } | { paged: false; body: unknown };

export function sectionRng(ctx: SectionContext, topic: string): Rng {
  return new Rng(`${ctx.seed}|${ctx.core.inn}|${topic}`);
}

export function whole(body: unknown): SectionContent {
  return { paged: false, body };
}

export function paged(items: unknown[]): SectionContent {
  return { paged: true, items };
}

/** A counterparty from the universe (never the company itself). */
export function counterparty(
  ctx: SectionContext,
  rngPick: (n: number) => number,
): { inn: string; name: string } {
  const list = ctx.universe.world.legalInns;
  let inn = list[rngPick(list.length)]!;
  if (inn === ctx.core.inn) inn = list[(list.indexOf(inn) + 1) % list.length]!;
  return { inn, name: ctx.universe.byInn.get(inn)?.nameShort ?? inn };
}
