// The cache-hits chart: bench/results/cache-hits.json drawn as an SVG the README shows. One
// panel per concurrency, in each a group of horizontal bars per target (dossier identity, gzip,
// br; bank record), one bar per server (emulator direct, nginx proxy_cache, the node:http
// ceiling, gateway memory, gateway Redis), its median req/s beside it and, beside a gateway's
// bar, its ratios to nginx and to the node:http ceiling in the same run (beside the ceiling's,
// its ratio to nginx). A server the run did not have (no nginx, no Redis) is absent, legend included.
// Fixed 900 px wide, system font, light background, no external reference: GitHub shows it as
// an image in both its light and dark themes.
//   node bin/run-ts.js bench/chart.ts [in.json] [out.svg]   (bench/results/cache-hits.json -> .svg)
// Must never: use a package, read the clock or the machine (every fact drawn comes from the
// JSON), or put text into the SVG unescaped.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** One cell of bench/results/cache-hits.json (the fields the chart draws). */
export interface CacheHitsCell {
  target: string;
  server: string;
  concurrency: number;
  /** req/s over nginx proxy_cache's for the same target and concurrency (null without nginx). */
  vs_nginx: number | null;
  /** req/s over the node:http ceiling's (absent in runs before the ceiling was measured). */
  vs_ceiling?: number | null;
  /** Redis gateway: req/s over the memory gateway's (absent in older runs). */
  vs_memory?: number | null;
  errors: Record<string, number>;
  req_per_s: number;
  p50_ms: number;
  p99_ms: number;
}

/** bench/results/cache-hits.json (the fields the chart draws). */
export interface CacheHitsReport {
  at: string;
  machine: {
    cpus: number;
    cpu_model: string | null;
    node: string;
    platform: string;
    loadavg_1m_at_start: number;
    loadavg_1m_at_end: number;
  };
  settings: { rounds: number; seconds_per_round: number; concurrency: number[] };
  results: CacheHitsCell[];
}

/** Okabe-Ito colours (told apart with any colour vision), in the order bench/cache-hits.ts runs them. */
const SERVER_COLOURS: ReadonlyArray<readonly [string, string]> = [
  ['emulator (direct)', '#999999'],
  ['nginx proxy_cache', '#009E73'],
  ['node:http ceiling', '#CC79A7'],
  ['gateway, memory', '#0072B2'],
  ['gateway, redis', '#D55E00'],
];
/** For a server the list above does not know (a later benchmark's addition). */
const SPARE_COLOURS = ['#E69F00', '#56B4E9', '#F0E442', '#000000'];
const NGINX = 'nginx proxy_cache';
const CEILING = 'node:http ceiling';

const WIDTH = 900;
const MARGIN = 16;
/** Target labels left of the bars; value, ratio and error text right of them. */
const PLOT_X0 = 170;
const PLOT_X1 = WIDTH - MARGIN - 205;
const BAR_H = 14;
const BAR_GAP = 3;
const GROUP_GAP = 12;
const FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif";
const INK = '#1f2328';
const MUTED = '#59636e';
const GRID = '#d1d9e0';

/** Text for an SVG text node or a double-quoted attribute. */
export function escapeXml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!,
  );
}

/** 17396 -> "17,396" (the same in every locale). */
const thousands = (n: number) => String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
/** 0 -> "0", 20000 -> "20k", 2500 -> "2.5k". */
const short = (n: number) => (n >= 1000 ? `${Number((n / 1000).toFixed(1))}k` : String(n));
/** Rough width of a line of text (px) in a proportional sans-serif: enough to lay out a legend. */
const textWidth = (text: string, size: number) => text.length * size * 0.56;

/** The smallest 1, 2 or 5 x 10^k step giving at most `ticks` steps up to `max`. */
function tickStep(max: number, ticks: number): number {
  const raw = max / ticks;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= raw)!;
}

function unique<T>(values: T[]): T[] {
  return [...new Set(values)];
}

/** A coordinate to one decimal. */
const px = (n: number) => String(Math.round(n * 10) / 10);

function text(
  x: number,
  y: number,
  content: string,
  attrs: { size?: number; fill?: string; weight?: string; anchor?: string } = {},
): string {
  const extra = [
    attrs.size && attrs.size !== 12 ? ` font-size="${attrs.size}"` : '',
    attrs.fill && attrs.fill !== INK ? ` fill="${attrs.fill}"` : '',
    attrs.weight ? ` font-weight="${attrs.weight}"` : '',
    attrs.anchor ? ` text-anchor="${attrs.anchor}"` : '',
  ].join('');
  return `<text x="${px(x)}" y="${px(y)}"${extra}>${escapeXml(content)}</text>`;
}

/** When the run was, to the minute, from the report's ISO time. */
function when(at: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(at);
  return m ? `${m[1]} ${m[2]} UTC` : at;
}

/** The whole chart, as the text of a standalone SVG file. */
export function cacheHitsSvg(report: CacheHitsReport): string {
  const cells = report.results;
  const known = SERVER_COLOURS.map(([name]) => name);
  const present = new Set(cells.map((c) => c.server));
  const servers = [
    ...known.filter((s) => present.has(s)),
    ...unique(cells.map((c) => c.server)).filter((s) => !known.includes(s)),
  ];
  const colour = new Map<string, string>(SERVER_COLOURS);
  for (const [i, server] of servers.filter((s) => !colour.has(s)).entries())
    colour.set(server, SPARE_COLOURS[i % SPARE_COLOURS.length]!);
  const targets = unique(cells.map((c) => c.target));
  const concurrencies = unique([
    ...report.settings.concurrency.filter((n) => cells.some((c) => c.concurrency === n)),
    ...cells.map((c) => c.concurrency),
  ]);

  const finite = cells.map((c) => c.req_per_s).filter((v) => Number.isFinite(v) && v > 0);
  const peak = finite.length ? Math.max(...finite) : 1;
  const step = tickStep(peak, 5);
  const axisMax = Math.ceil(peak / step) * step;
  const scale = (PLOT_X1 - PLOT_X0) / axisMax;

  const m = report.machine;
  const s = report.settings;
  const out: string[] = [];
  let y = 30;
  out.push(
    text(MARGIN, y, 'Cache HITs: requests per second (higher is better)', { size: 18, weight: '600' }),
  );
  y += 22;
  const model = m.cpu_model && m.cpu_model.length > 48 ? `${m.cpu_model.slice(0, 47)}…` : m.cpu_model;
  const ratios = cells.some((c) => c.vs_nginx !== null && c.server !== NGINX);
  const ceilingRatios = cells.some((c) => c.vs_ceiling != null && c.server !== CEILING);
  const notes = [
    `${m.cpus} CPUs${model ? ` (${model})` : ''}, ${m.platform}, Node ${m.node}; run ${when(report.at)}`,
    `Load (1 min) ${m.loadavg_1m_at_start} at start, ${m.loadavg_1m_at_end} at end; each bar is the median of ${s.rounds} round${s.rounds === 1 ? '' : 's'} of ${s.seconds_per_round} s.`,
    ...(ratios || ceilingRatios
      ? [
          `Beside a gateway's bar: its req/s over ${[ratios ? "nginx proxy_cache's" : '', ceilingRatios ? "the node:http ceiling's" : ''].filter(Boolean).join(' and over ')}, same target and connections.`,
        ]
      : []),
    ...(present.has(CEILING)
      ? ['The node:http ceiling: a bare node:http server writing the bytes the gateway sent for that cell.']
      : []),
  ];
  for (const note of notes) {
    y += note === notes[0] ? 22 : 17;
    out.push(text(MARGIN, y, note, { fill: MUTED }));
  }

  // Legend: a swatch and a name per server the run had.
  y += 24;
  let x = MARGIN;
  for (const server of servers) {
    out.push(
      `<rect x="${px(x)}" y="${y - 10}" width="12" height="12" rx="2" fill="${colour.get(server)}"/>`,
      text(x + 17, y, server),
    );
    x += 17 + textWidth(server, 12) + 22;
  }

  for (const concurrency of concurrencies) {
    y += 34;
    out.push(text(MARGIN, y, `${concurrency} connections`, { size: 14, weight: '600' }));
    // Tick labels above the grid of this panel.
    y += 18;
    const gridTop = y + 4;
    const groups = targets.filter((t) => cells.some((c) => c.target === t && c.concurrency === concurrency));
    const panelHeight = groups.length * (servers.length * (BAR_H + BAR_GAP) - BAR_GAP + GROUP_GAP);
    const gridBottom = gridTop + panelHeight;
    for (let tick = 0; tick <= axisMax; tick += step) {
      const tx = PLOT_X0 + tick * scale;
      out.push(
        `<line x1="${px(tx)}" y1="${gridTop}" x2="${px(tx)}" y2="${gridBottom - GROUP_GAP / 2}" stroke="${GRID}" stroke-width="1"/>`,
        text(tx, y, short(tick), { size: 11, fill: MUTED, anchor: 'middle' }),
      );
    }
    y = gridTop + GROUP_GAP / 2;
    for (const target of groups) {
      const groupHeight = servers.length * (BAR_H + BAR_GAP) - BAR_GAP;
      out.push(text(MARGIN, y + groupHeight / 2 + 4, target, { size: 13 }));
      servers.forEach((server, i) => {
        const cell = cells.find(
          (c) => c.target === target && c.server === server && c.concurrency === concurrency,
        );
        if (!cell) return;
        const barY = y + i * (BAR_H + BAR_GAP);
        const value = Number.isFinite(cell.req_per_s) && cell.req_per_s > 0 ? cell.req_per_s : 0;
        const width = value * scale;
        const errors = Object.values(cell.errors ?? {}).reduce((sum, n) => sum + n, 0);
        const vsMemory = cell.vs_memory != null ? `, ${cell.vs_memory.toFixed(2)}x memory` : '';
        const tip = `${server}, ${target}, ${concurrency} connections: ${thousands(value)} req/s, p50 ${cell.p50_ms} ms, p99 ${cell.p99_ms} ms${vsMemory}${errors ? `, ${errors} errors` : ''}`;
        out.push(
          `<rect class="bar" data-server="${escapeXml(server)}" data-target="${escapeXml(target)}" data-concurrency="${concurrency}" data-req-per-s="${value}" x="${PLOT_X0}" y="${barY}" width="${px(width)}" height="${BAR_H}" fill="${colour.get(server)}"><title>${escapeXml(tip)}</title></rect>`,
        );
        const labelY = barY + BAR_H - 3;
        let lx = PLOT_X0 + width + 5;
        const label = value ? thousands(value) : 'n/a';
        out.push(text(lx, labelY, label, { size: 11 }));
        lx += textWidth(label, 11) + 6;
        if (cell.vs_nginx !== null && Number.isFinite(cell.vs_nginx) && server !== NGINX) {
          const ratio = `${cell.vs_nginx.toFixed(2)}× nginx`;
          out.push(text(lx, labelY, ratio, { size: 11, fill: MUTED }));
          lx += textWidth(ratio, 11) + 6;
        }
        if (cell.vs_ceiling != null && Number.isFinite(cell.vs_ceiling) && server !== CEILING) {
          const ratio = `${cell.vs_ceiling.toFixed(2)}× ceiling`;
          out.push(text(lx, labelY, ratio, { size: 11, fill: MUTED }));
          lx += textWidth(ratio, 11) + 6;
        }
        if (errors)
          out.push(
            text(lx, labelY, `${errors} errors`, {
              size: 11,
              fill: '#cf222e',
              weight: '600',
            }),
          );
      });
      y += groupHeight + GROUP_GAP;
    }
    y = gridBottom;
  }
  const height = y + 16;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="${FONT}" font-size="12" fill="${INK}" role="img" aria-labelledby="title">`,
    `<title id="title">Cache HITs: req/s by target, server and connections (${escapeXml(when(report.at))})</title>`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    ...out,
    '</svg>',
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const input = process.argv[2] ?? 'bench/results/cache-hits.json';
  const output = process.argv[3] ?? 'bench/results/cache-hits.svg';
  const report = JSON.parse(readFileSync(input, 'utf8')) as CacheHitsReport;
  writeFileSync(output, cacheHitsSvg(report));
  console.log(`written ${output} (${report.results.length} bars from ${input})`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await main();
