// The cache-hits chart (bench/chart.ts) from a real run's JSON: a well-formed standalone SVG
// with one bar per cell, bar lengths proportional to req/s on one scale, every text escaped,
// the ratio to nginx beside each gateway bar, the machine facts in the subtitle, and a server
// the run did not have (no nginx, no Redis) absent everywhere, legend included.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type CacheHitsReport, cacheHitsSvg } from '../../bench/chart.ts';

const sample = (): CacheHitsReport =>
  JSON.parse(
    readFileSync(new URL('../fixtures/cache-hits-sample.json', import.meta.url), 'utf8'),
  ) as CacheHitsReport;

const NAME = '[A-Za-z_][\\w.:-]*';
/** Text or an attribute value: no `<`, and `&` only as an entity XML knows. */
const CHARS = '(?:[^<&"]|&(?:amp|lt|gt|quot|apos|#\\d+|#x[\\da-fA-F]+);)*';
const TAG = new RegExp(`<(/?)(${NAME})((?:\\s+${NAME}="${CHARS}")*)\\s*(/?)>`, 'y');
const ATTR = new RegExp(`(${NAME})="`, 'g');
const TEXT = new RegExp(`(?:${CHARS}|")*`, 'y');

/**
 * Throws unless `xml` is one well-formed element (after an optional XML declaration): tags
 * nest and close by name, attribute values are double-quoted and escaped, no attribute is
 * repeated, and text has no bare `<` or `&`. Returns the element names in document order.
 */
function wellFormed(xml: string): string[] {
  let at = /^<\?xml [^?]*\?>\n?/.exec(xml)?.[0].length ?? 0;
  const open: string[] = [];
  const names: string[] = [];
  let roots = 0;
  while (at < xml.length) {
    if (xml[at] === '<') {
      TAG.lastIndex = at;
      const tag = TAG.exec(xml);
      if (!tag) throw new Error(`malformed tag at ${at}: ${xml.slice(at, at + 80)}`);
      const [whole, closing, name, attrs, selfClosing] = tag;
      at += whole.length;
      if (closing) {
        if (attrs || selfClosing) throw new Error(`closing tag </${name}> with attributes`);
        const top = open.pop();
        if (top !== name) throw new Error(`</${name}> closes <${top}>`);
        continue;
      }
      const attrNames = [...attrs!.matchAll(ATTR)].map((m) => m[1]);
      if (new Set(attrNames).size !== attrNames.length) throw new Error(`repeated attribute in <${name}>`);
      if (open.length === 0 && ++roots > 1) throw new Error(`second root element <${name}>`);
      names.push(name!);
      if (!selfClosing) open.push(name!);
    } else {
      TEXT.lastIndex = at;
      const text = TEXT.exec(xml)![0];
      if (!text.length) throw new Error(`bare & at ${at}: ${xml.slice(at, at + 40)}`);
      if (open.length === 0 && text.trim()) throw new Error(`text outside the root: ${text.slice(0, 40)}`);
      at += text.length;
    }
  }
  if (open.length) throw new Error(`unclosed <${open.join('> <')}>`);
  if (roots !== 1) throw new Error('no root element');
  return names;
}

interface Bar {
  server: string;
  target: string;
  concurrency: number;
  x: number;
  width: number;
}

function bars(svg: string): Bar[] {
  return [...svg.matchAll(/<rect class="bar" ([^>]*)>/g)].map(([, attrs]) => {
    const attr = (name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(attrs!)![1]!;
    return {
      server: attr('data-server'),
      target: attr('data-target'),
      concurrency: Number(attr('data-concurrency')),
      x: Number(attr('x')),
      width: Number(attr('width')),
    };
  });
}

/** The text content of every <text> element (entities left as written). */
const texts = (svg: string) => [...svg.matchAll(/<text [^>]*>([^<]*)<\/text>/g)].map((m) => m[1]!);

describe('cacheHitsSvg', () => {
  it('is one well-formed <svg> element, 900 px wide, with its own white background and no external reference', () => {
    const svg = cacheHitsSvg(sample());
    const names = wellFormed(svg);
    expect(names[0]).toBe('svg');
    expect(svg).toMatch(/<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="900" height="\d+"/);
    expect(svg).toMatch(/<rect width="900" height="\d+" fill="#ffffff"\/>/);
    expect(svg).not.toMatch(/href|url\(|@import|<image|<style|<script/i);
    expect(new Set(names)).toEqual(new Set(['svg', 'title', 'rect', 'text', 'line']));
  });

  it('the checker itself refuses what is not well-formed', () => {
    expect(() => wellFormed('<svg><text>a</svg>')).toThrow(/closes/);
    expect(() => wellFormed('<svg><text>a & b</text></svg>')).toThrow(/bare &/);
    expect(() => wellFormed('<svg><text x="1" x="2">a</text></svg>')).toThrow(/repeated/);
    expect(() => wellFormed('<svg><text x="a<b">a</text></svg>')).toThrow(/malformed/);
    expect(() => wellFormed('<svg></svg><svg></svg>')).toThrow(/second root/);
    expect(() => wellFormed('<svg><g>')).toThrow(/unclosed/);
  });

  it('draws one bar per cell, in the colour of its server', () => {
    const report = sample();
    const svg = cacheHitsSvg(report);
    const drawn = bars(svg);
    expect(drawn).toHaveLength(report.results.length);
    expect(report.results).toHaveLength(32); // 4 targets x 4 servers x 2 concurrencies
    for (const c of report.results)
      expect(
        drawn.filter(
          (b) => b.server === c.server && b.target === c.target && b.concurrency === c.concurrency,
        ),
      ).toHaveLength(1);
    const fills = new Map(
      [...svg.matchAll(/<rect class="bar" data-server="([^"]+)"[^>]* fill="(#[0-9A-Fa-f]{6})"/g)].map((m) => [
        m[1],
        m[2],
      ]),
    );
    expect(new Set(fills.values()).size).toBe(4);
  });

  it('bar lengths are proportional to req/s, on one scale for both concurrencies', () => {
    const report = sample();
    const drawn = bars(cacheHitsSvg(report));
    const find = (server: string, target: string, concurrency: number) => ({
      bar: drawn.find((b) => b.server === server && b.target === target && b.concurrency === concurrency)!,
      cell: report.results.find(
        (c) => c.server === server && c.target === target && c.concurrency === concurrency,
      )!,
    });
    const a = find('gateway, memory', 'dossier, identity', 16); // 17,396 req/s
    const b = find('nginx proxy_cache', 'dossier, gzip', 64); // 46,532 req/s
    const c = find('emulator (direct)', 'bank record', 64); // 15,585 req/s
    expect(a.cell.req_per_s).toBe(17396);
    expect(b.cell.req_per_s).toBe(46532);
    expect(new Set(drawn.map((bar) => bar.x)).size).toBe(1); // every bar starts at the same axis
    // Widths are written to 0.1 px, so the ratios agree to within that rounding.
    expect(a.bar.width / b.bar.width).toBeCloseTo(a.cell.req_per_s / b.cell.req_per_s, 2);
    expect(c.bar.width / a.bar.width).toBeCloseTo(c.cell.req_per_s / a.cell.req_per_s, 2);
    expect(b.bar.width).toBeGreaterThan(2.5 * a.bar.width);
    // The longest bar leaves room for its value and ratio inside the 900 px.
    expect(Math.max(...drawn.map((bar) => bar.x + bar.width))).toBeLessThan(760);
  });

  it('prints each value and, beside each gateway bar, its ratio to nginx', () => {
    const report = sample();
    const svg = cacheHitsSvg(report);
    // What follows each bar up to the next one: its value, then its ratio (a gateway's only).
    const besides = svg
      .split('<rect class="bar" ')
      .slice(1)
      .map((chunk) => ({ bar: bars(`<rect class="bar" ${chunk}`)[0]!, lines: texts(chunk) }));
    expect(besides).toHaveLength(32);
    for (const { bar, lines } of besides) {
      const cell = report.results.find(
        (c) => c.server === bar.server && c.target === bar.target && c.concurrency === bar.concurrency,
      )!;
      expect(lines[0]).toBe(cell.req_per_s.toLocaleString('en-US'));
      const ratio = lines.filter((t) => t.endsWith('× nginx'));
      expect(ratio).toEqual(cell.server.startsWith('gateway') ? [`${cell.vs_nginx!.toFixed(2)}× nginx`] : []);
    }
    const all = texts(svg);
    expect(all).toContain('17,396');
    expect(all).toContain('1.59× nginx');
    expect(all).toContain('0.41× nginx');
    expect(all.filter((t) => t.endsWith('× nginx'))).toHaveLength(16);
  });

  it('the subtitle gives the machine, the load at start and end, and the rounds from the JSON', () => {
    const report = sample();
    report.machine.loadavg_1m_at_start = 0.37;
    report.machine.loadavg_1m_at_end = 4.2;
    report.settings.rounds = 5;
    const subtitle = texts(cacheHitsSvg(report)).join('\n');
    expect(subtitle).toContain('2 CPUs (AMD EPYC), linux x64, Node v20.20.2; run 2026-11-23 23:18 UTC');
    expect(subtitle).toContain('Load (1 min) 0.37 at start, 4.2 at end');
    expect(subtitle).toContain('the median of 5 rounds of 1 s');
  });

  it('escapes every text it draws: names, machine facts, tooltips', () => {
    const report = sample();
    const evil = 'x <script>alert("1")</script> & \'y\'';
    for (const c of report.results) if (c.target === 'bank record') c.target = evil;
    report.machine.cpu_model = 'R&D <chip>';
    const svg = cacheHitsSvg(report);
    wellFormed(svg);
    expect(svg).not.toContain('<script');
    expect(svg).not.toContain('R&D');
    expect(texts(svg)).toContain('x &lt;script&gt;alert(&quot;1&quot;)&lt;/script&gt; &amp; &apos;y&apos;');
    expect(svg).toContain('R&amp;D &lt;chip&gt;');
    expect(bars(svg).filter((b) => b.target.startsWith('x &lt;script&gt;'))).toHaveLength(8);
  });

  it('a run without nginx and without Redis: those servers are absent, legend and ratios included', () => {
    const report = sample();
    report.results = report.results
      .filter((c) => c.server !== 'nginx proxy_cache' && c.server !== 'gateway, redis')
      .map((c) => ({ ...c, vs_nginx: null }));
    const svg = cacheHitsSvg(report);
    wellFormed(svg);
    expect(svg).not.toMatch(/nginx|redis/i);
    expect(bars(svg)).toHaveLength(16);
    const legend = [...svg.matchAll(/<rect x="[\d.]+" y="[\d.]+" width="12" height="12"/g)];
    expect(legend).toHaveLength(2);
    const lines = texts(svg);
    expect(lines).toContain('emulator (direct)');
    expect(lines).toContain('gateway, memory');
  });

  it('a run with the node:http ceiling: its bars in their own colour, and beside each gateway bar its ratio to the ceiling', () => {
    const report = sample();
    const ceilings = report.results
      .filter((c) => c.server === 'nginx proxy_cache')
      .map((c) => ({ ...c, server: 'node:http ceiling', req_per_s: Math.round(c.req_per_s * 0.8) }));
    for (const c of report.results)
      if (c.server.startsWith('gateway')) {
        const ceiling = ceilings.find((x) => x.target === c.target && x.concurrency === c.concurrency)!;
        c.vs_ceiling = Math.round((c.req_per_s / ceiling.req_per_s) * 1000) / 1000;
      }
    report.results.push(...ceilings);
    const svg = cacheHitsSvg(report);
    wellFormed(svg);
    expect(bars(svg)).toHaveLength(40);
    const legend = [...svg.matchAll(/<rect x="[\d.]+" y="[\d.]+" width="12" height="12"/g)];
    expect(legend).toHaveLength(5);
    const fills = new Set(
      [...svg.matchAll(/<rect class="bar" data-server="[^"]+"[^>]* fill="(#[0-9A-Fa-f]{6})"/g)].map(
        (m) => m[1],
      ),
    );
    expect(fills.size).toBe(5);
    const besides = svg
      .split('<rect class="bar" ')
      .slice(1)
      .map((chunk) => ({ bar: bars(`<rect class="bar" ${chunk}`)[0]!, lines: texts(chunk) }));
    for (const { bar, lines } of besides) {
      const cell = report.results.find(
        (c) => c.server === bar.server && c.target === bar.target && c.concurrency === bar.concurrency,
      )!;
      const ratio = lines.filter((t) => t.endsWith('× ceiling'));
      expect(ratio).toEqual(
        cell.server.startsWith('gateway') ? [`${cell.vs_ceiling!.toFixed(2)}× ceiling`] : [],
      );
    }
    expect(Math.max(...bars(svg).map((b) => b.x + b.width))).toBeLessThan(700);
    expect(texts(svg).join('\n')).toContain('over the node:http ceiling&apos;s, same target');
    expect(texts(svg)).toContain(
      'The node:http ceiling: a bare node:http server writing the bytes the gateway sent for that cell.',
    );
  });

  it('marks a cell that had errors, so its req/s is not read as clean', () => {
    const report = sample();
    report.results[2]!.errors = { 'x-cache MISS': 12, 'status 502': 3 };
    const lines = texts(cacheHitsSvg(report));
    expect(lines.filter((t) => t.endsWith(' errors'))).toEqual(['15 errors']);
  });
});
