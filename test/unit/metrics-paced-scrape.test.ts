// A flood of scrapes on one connection is paced to one answer per render interval; other
// connections (a second Prometheus) are not held back by it; with no render cache nothing waits.
import { expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { pacedScrape } from '../../src/ops/metrics-routes.ts';

function rig(cacheMs: number) {
  const clock = new ManualClock(1_000_000);
  let renders = 0;
  const slept: number[] = [];
  const scrape = pacedScrape(
    async () => `render ${++renders}`,
    cacheMs,
    () => clock.now(),
    async (ms) => {
      slept.push(ms);
      clock.advance(ms);
    },
  );
  return { clock, scrape, slept, renders: () => renders };
}

it('one connection asking again within the interval waits for the next render', async () => {
  const { clock, scrape, slept, renders } = rig(1_000);
  const flood = {};
  expect(await scrape(flood)).toBe('render 1');
  clock.advance(100);
  expect(await scrape(flood)).toBe('render 2'); // waited 900 ms for it
  expect(slept).toEqual([900]);
  for (let i = 0; i < 5; i++) await scrape(flood);
  expect(renders()).toBe(7); // one render (and one answer) per interval, however fast it asks
  expect(slept.slice(1)).toEqual([1_000, 1_000, 1_000, 1_000, 1_000]);
});

it('another connection gets the current render at once', async () => {
  const { scrape, slept, renders } = rig(1_000);
  const flood = {};
  const prometheus = {};
  await scrape(flood);
  expect(await scrape(prometheus)).toBe('render 1');
  expect(slept).toEqual([]);
  expect(renders()).toBe(1);
});

it('with no render cache (renderCacheMs 0) nothing is paced', async () => {
  const { scrape, slept, renders } = rig(0);
  const c = {};
  await scrape(c);
  await scrape(c);
  expect(slept).toEqual([]);
  expect(renders()).toBe(2);
});
