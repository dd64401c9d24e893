// PriceBook.learn (issue 28 item 4): a charge's amount sets its kind's price at once; an older
// call's charge never replaces a newer one's; /v1/me wins again once it shows the same amount or
// after LEARNED_TRUST_MS; a learned price spreads (onLearn) only when learned here.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import {
  LEARNED_TRUST_MS,
  type LearnedPrice,
  PriceBook,
  parseLearnedPrice,
} from '../../src/cost/price-book.ts';

function book() {
  const clock = new ManualClock(1_000_000);
  const heard: Array<[LearnedPrice, boolean]> = [];
  const prices = new PriceBook({
    upstream: { request: async () => ({ status: 500, headers: {}, body: Buffer.alloc(0) }) as never },
    clock,
    refreshMs: 60_000,
    timeoutMs: 1000,
    onLearn: (l, spread) => heard.push([l, spread]),
  });
  prices.apply({ prices: [{ key: 'dossier', price_minor: 9_900 }] });
  return { clock, prices, heard };
}

describe('prices learned from charges', () => {
  it('a charge that differs from the book sets the price at once, and is spread', () => {
    const { prices, heard } = book();
    expect(prices.learn({ kind: 'dossier', priceMinor: 9_900, startedAt: 1 })).toBe(false);
    expect(prices.learn({ kind: 'dossier', priceMinor: 29_700, startedAt: 2 })).toBe(true);
    expect(prices.price('dossier')).toBe(29_700);
    expect(prices.priceForBudget('dossier')).toBe(29_700);
    expect(heard).toEqual([[{ kind: 'dossier', priceMinor: 29_700, startedAt: 2 }, true]]);
    expect(prices.learn({ kind: 'dossier', priceMinor: 39_600, startedAt: 3 }, false)).toBe(true);
    expect(heard[1]![1]).toBe(false);
  });

  it("an older call's charge (a replay) does not undo a newer one's", () => {
    const { prices } = book();
    prices.learn({ kind: 'dossier', priceMinor: 29_700, startedAt: 500 });
    expect(prices.learn({ kind: 'dossier', priceMinor: 9_900, startedAt: 400 })).toBe(false);
    expect(prices.price('dossier')).toBe(29_700);
  });

  it('/v1/me showing the old amount does not undo it, until LEARNED_TRUST_MS pass', () => {
    const { prices, clock } = book();
    prices.learn({ kind: 'dossier', priceMinor: 29_700, startedAt: clock.now() });
    clock.advance(5_000);
    prices.apply({ prices: [{ key: 'dossier', price_minor: 9_900 }] });
    expect(prices.price('dossier')).toBe(29_700);
    clock.advance(LEARNED_TRUST_MS);
    prices.apply({ prices: [{ key: 'dossier', price_minor: 9_900 }] });
    expect(prices.price('dossier')).toBe(9_900);
    expect(prices.learnedPrices()).toEqual([]);
  });

  it('/v1/me showing the learned amount takes over at once', () => {
    const { prices } = book();
    prices.learn({ kind: 'dossier', priceMinor: 29_700, startedAt: 1 });
    prices.apply({ prices: [{ key: 'dossier', price_minor: 29_700 }] });
    expect(prices.learnedPrices()).toEqual([]);
    expect(prices.price('dossier')).toBe(29_700);
  });

  it('a kind with no price ever known is learned; a zero or bad amount never', () => {
    const { prices } = book();
    expect(prices.price('person')).toBeNull();
    expect(prices.learn({ kind: 'person', priceMinor: 0, startedAt: 1 })).toBe(false);
    expect(prices.learn({ kind: 'person', priceMinor: 1.5, startedAt: 1 })).toBe(false);
    expect(prices.learn({ kind: 'person', priceMinor: 4_900, startedAt: 1 })).toBe(true);
    expect(prices.priceForBudget('person')).toBe(4_900);
  });

  it('bus messages parse only when well formed', () => {
    expect(parseLearnedPrice('{"kind":"dossier","priceMinor":29700,"startedAt":5}')).toEqual({
      kind: 'dossier',
      priceMinor: 29_700,
      startedAt: 5,
    });
    expect(parseLearnedPrice('nope')).toBeNull();
    expect(parseLearnedPrice('{"kind":"dossier","priceMinor":"x","startedAt":5}')).toBeNull();
  });
});
