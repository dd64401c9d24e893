// The console's page logic: a plain ES module (no framework; README "Console" says why) that
// signs in once (POST /console/session), then reads and changes everything through the same
// /admin/* API an operator's curl uses, with the session cookie and, on writes, the CSRF token.
// Hash routes: #/overview, #/budgets, #/ledger, #/audit.
//
// Must never: keep the admin token (it is sent once and the field is cleared), build markup from
// data as HTML (every text goes in with textContent), or use inline script or style (the CSP
// refuses them).

const SVG = 'http://www.w3.org/2000/svg';
const LEDGER_PAGE = 50;
const AUDIT_PAGE = 20;
const GLOBAL = '*global*';

/** @type {{name: string, role: string, csrf_token: string} | null} */
let session = null;
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** An element with attributes (on*, style and innerHTML are never used) and children. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v === null || v === undefined) continue;
    el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function s(tag, attrs = {}, text) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

const rub = new Intl.NumberFormat('ru-RU', { style: 'currency', currency: 'RUB' });
/** Kopecks as roubles, or a dash for none. */
const money = (minor) => (minor === null || minor === undefined ? '—' : rub.format(minor / 100));
/** Roubles typed in a form as kopecks; empty = null (no cap); NaN when not a non-negative amount. */
function toMinor(text) {
  const t = text.trim().replace(/\s/g, '').replace(',', '.');
  if (t === '') return null;
  if (!/^\d+(\.\d{1,2})?$/.test(t)) return Number.NaN;
  return Math.round(Number(t) * 100);
}
const fromMinor = (minor) => (minor === null ? '' : (minor / 100).toFixed(2));

class SignedOut extends Error {}

/** A budget's scope as people read it (`_global` is every app together). */
const label = (scope) => (scope === '_global' ? 'global (all apps)' : scope);

/** One admin API call with the session; a 401 ends the session and shows the sign-in page. */
async function api(method, path, body, headers = {}) {
  const init = { method, headers: { ...headers }, credentials: 'same-origin' };
  if (method !== 'GET') init.headers['x-csrf-token'] = session?.csrf_token ?? '';
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  if (res.status === 401) {
    showSignIn('Your session has ended; sign in again. Nothing was changed.');
    throw new SignedOut();
  }
  return res;
}

async function errorText(res) {
  try {
    const body = await res.json();
    const fields = body?.error?.details?.fields;
    const extra = Array.isArray(fields)
      ? `: ${fields.map((f) => `${f.field}: ${f.message}`).join('; ')}`
      : '';
    return `${body?.error?.message ?? res.statusText}${extra}`;
  } catch {
    return `${res.status} ${res.statusText}`;
  }
}

function showSignIn(message = '') {
  session = null;
  $('nav').hidden = true;
  $('signout').hidden = true;
  $('who').textContent = '';
  $('page').hidden = true;
  $('page').replaceChildren();
  $('signin').hidden = false;
  $('signin-error').textContent = message;
  $('token').focus();
}

function signedIn(who) {
  session = who;
  $('signin').hidden = true;
  $('nav').hidden = false;
  $('signout').hidden = false;
  $('who').textContent = `Signed in as ${who.name} (${who.role})`;
  if (!location.hash || location.hash === '#') location.hash = '#/overview';
  else route();
}

const canEdit = () => session !== null && (session.role === 'admin' || session.role === 'finance');

// ---- Overview ---------------------------------------------------------------------------------

async function budgets() {
  const res = await api('GET', '/admin/budgets');
  if (!res.ok) throw new Error(await errorText(res));
  return res.json();
}

function spendChart(rows) {
  const barH = 22;
  const gap = 18;
  const left = 140;
  const width = 760;
  const plot = width - left - 180;
  const height = rows.length * (barH + gap) + 30;
  const max = Math.max(1, ...rows.map((r) => Math.max(r.spent, r.cap ?? 0)));
  const svg = s('svg', {
    class: 'chart',
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    role: 'img',
    'aria-labelledby': 'chart-title chart-desc',
  });
  svg.append(s('title', { id: 'chart-title' }, 'Spend this month against the cap, per app'));
  svg.append(
    s(
      'desc',
      { id: 'chart-desc' },
      rows
        .map((r) => `${r.app}: ${money(r.spent)} of ${r.cap === null ? 'no cap' : money(r.cap)}`)
        .join('; '),
    ),
  );
  const defs = s('defs');
  const pattern = s('pattern', {
    id: 'hatch',
    width: 6,
    height: 6,
    patternUnits: 'userSpaceOnUse',
    patternTransform: 'rotate(45)',
  });
  pattern.append(s('rect', { width: 6, height: 6, fill: '#ffffff' }));
  pattern.append(s('line', { x1: 0, y1: 0, x2: 0, y2: 6, stroke: '#57606a', 'stroke-width': 2 }));
  defs.append(pattern);
  svg.append(defs);
  rows.forEach((r, i) => {
    const y = 10 + i * (barH + gap);
    svg.append(s('text', { x: 0, y: y + barH * 0.7 }, r.app));
    if (r.cap !== null) {
      // The cap: a hatched, outlined bar (shape, not colour, tells it from the spend).
      svg.append(
        s('rect', {
          x: left,
          y,
          width: Math.max(1, (r.cap / max) * plot),
          height: barH,
          fill: 'url(#hatch)',
          stroke: '#1b1f24',
        }),
      );
    }
    const over = r.cap !== null && r.spent >= r.cap;
    svg.append(
      s('rect', {
        x: left,
        y: y + 5,
        width: Math.max(1, (r.spent / max) * plot),
        height: barH - 10,
        fill: over ? '#a40e26' : '#0b5cad',
      }),
    );
    const pct = r.cap
      ? ` (${Math.round((r.spent / r.cap) * 100)}% of cap${over ? ', REACHED' : ''})`
      : ' (no cap)';
    svg.append(s('text', { x: left + plot + 8, y: y + barH * 0.7 }, `${money(r.spent)}${pct}`));
  });
  const ly = height - 10;
  svg.append(s('rect', { x: left, y: ly - 10, width: 14, height: 10, fill: '#0b5cad' }));
  svg.append(s('text', { x: left + 20, y: ly }, 'spent'));
  svg.append(
    s('rect', { x: left + 80, y: ly - 10, width: 14, height: 10, fill: 'url(#hatch)', stroke: '#1b1f24' }),
  );
  svg.append(s('text', { x: left + 100, y: ly }, 'cap'));
  return svg;
}

async function overview(page) {
  const data = await budgets();
  const find = (list, period) => list.find((b) => b.period === period) ?? null;
  const apps = Object.keys(data.budgets).filter((a) => a !== GLOBAL);
  const rows = apps.map((app) => ({
    app,
    day: find(data.budgets[app], 'day'),
    month: find(data.budgets[app], 'month'),
  }));
  const global = data.budgets[GLOBAL] ?? [];
  const sum = (period) => rows.reduce((t, r) => t + (r[period]?.spent_minor ?? 0), 0);
  const cell = (b, field) => h('td', { class: 'num' }, money(b ? b[field] : null));
  const table = h(
    'table',
    {},
    h('caption', {}, `Spend, caps and what remains (time zone ${data.time_zone})`),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col' }, 'App'),
        [
          'Today spent',
          'Today cap',
          'Today remaining',
          'Month spent',
          'Month cap',
          'Month remaining',
          'Month-end forecast',
        ].map((t) => h('th', { scope: 'col', class: 'num' }, t)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((r) =>
        h(
          'tr',
          { 'data-app': r.app },
          h('th', { scope: 'row' }, r.app),
          cell(r.day, 'spent_minor'),
          cell(r.day, 'limit_minor'),
          cell(r.day, 'remaining_minor'),
          cell(r.month, 'spent_minor'),
          cell(r.month, 'limit_minor'),
          cell(r.month, 'remaining_minor'),
          cell(r.month, 'forecast_minor'),
        ),
      ),
      h(
        'tr',
        { 'data-app': 'total' },
        h('th', { scope: 'row' }, 'Total (global cap)'),
        h('td', { class: 'num' }, money(sum('day'))),
        cell(find(global, 'day'), 'limit_minor'),
        cell(find(global, 'day'), 'remaining_minor'),
        h('td', { class: 'num' }, money(sum('month'))),
        cell(find(global, 'month'), 'limit_minor'),
        cell(find(global, 'month'), 'remaining_minor'),
        cell(find(global, 'month'), 'forecast_minor'),
      ),
    ),
  );
  const chartRows = rows.map((r) => ({
    app: r.app,
    spent: r.month?.spent_minor ?? 0,
    cap: r.month?.limit_minor ?? null,
  }));
  page.replaceChildren(
    h('h1', {}, 'Overview'),
    table,
    h('h2', {}, 'This month: spend against cap'),
    spendChart(chartRows),
    await savingsSection(data.time_zone),
    await walletSection(),
  );
}

/** This month's savings by reason and the share answered without paying (the month's statement). */
async function savingsSection(zone) {
  const month = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit' })
    .format(new Date())
    .slice(0, 7);
  const section = h(
    'section',
    { 'aria-labelledby': 'savings-h' },
    h('h2', { id: 'savings-h' }, `Savings, ${month}`),
  );
  const res = await api('GET', `/admin/statements/${month}`);
  if (!res.ok) {
    section.append(h('p', { class: 'error' }, await errorText(res)));
    return section;
  }
  const st = await res.json();
  const reasons = Object.keys(st.total.savings.by_reason).sort();
  const share = (p) =>
    p.requests.unpaid_share === null ? '—' : `${Math.round(p.requests.unpaid_share * 100)} %`;
  section.append(
    h(
      'table',
      {},
      h(
        'caption',
        {},
        'Saved against calling the vendor directly, by reason; requests answered without paying',
      ),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', { scope: 'col' }, 'App'),
          reasons.map((r) => h('th', { scope: 'col', class: 'num' }, r)),
          h('th', { scope: 'col', class: 'num' }, 'Saved'),
          h('th', { scope: 'col', class: 'num' }, 'Spent'),
          h('th', { scope: 'col', class: 'num' }, 'Answered without paying'),
        ),
      ),
      h(
        'tbody',
        {},
        [...st.apps, { ...st.total, app: 'Total' }].map((p) =>
          h(
            'tr',
            { 'data-savings': p.app },
            h('th', { scope: 'row' }, p.app),
            reasons.map((r) => h('td', { class: 'num' }, money(p.savings.by_reason[r] ?? 0))),
            h('td', { class: 'num' }, money(p.savings.total_minor)),
            h('td', { class: 'num' }, money(p.charges.amount_minor)),
            h('td', { class: 'num', 'data-field': 'unpaid-share' }, share(p)),
          ),
        ),
      ),
    ),
  );
  return section;
}

/** Days the last balance lasts at the average daily ledger spend of the days shown. */
function runway(last, days) {
  const spent = days.reduce((n, d) => n + d.ledger_minor, 0);
  if (!last || days.length === 0) return 'not known yet';
  if (spent === 0) return 'no spend in these days';
  return `${Math.floor(last.balance_minor / (spent / days.length))} days`;
}

/** The vendor's wallet against the ledger, last 7 days (GET /admin/reconciliation). */
async function walletSection() {
  const res = await api('GET', '/admin/reconciliation');
  const section = h(
    'section',
    { 'aria-labelledby': 'wallet-h' },
    h('h2', { id: 'wallet-h' }, 'Wallet, last 7 days'),
  );
  if (!res.ok) {
    section.append(h('p', { class: 'error' }, await errorText(res)));
    return section;
  }
  const rec = await res.json();
  const last = rec.days.at(-1);
  const dl = h(
    'dl',
    { class: 'wallet' },
    h('dt', {}, 'Balance (as the vendor last showed it)'),
    h('dd', { 'data-field': 'balance' }, last ? money(last.balance_minor) : 'not known yet'),
    h('dt', {}, 'Unattributed spend (the wallet fell by more than the ledger charged)'),
    h('dd', { 'data-field': 'unattributed' }, money(rec.totals.unattributed_minor)),
    h('dt', {}, 'Top-ups'),
    h('dd', { 'data-field': 'topups' }, money(rec.totals.top_up_minor)),
    h('dt', {}, 'Runway (balance over the average daily spend of these days)'),
    h('dd', { 'data-field': 'runway' }, runway(last, rec.days)),
  );
  section.append(dl);
  return section;
}

// ---- Budgets ----------------------------------------------------------------------------------

async function budgetsPage(page) {
  const data = await budgets();
  const list = Object.entries(data.budgets).flatMap(([app, items]) =>
    items.map((b) => ({ ...b, app: app === GLOBAL ? '_global' : app })),
  );
  const editor = h('div', { id: 'editor' });
  const status = h('p', { id: 'budget-status', role: 'status' });
  const head = [
    'Budget',
    'Period',
    'Cap',
    'Soft threshold',
    'Spent',
    'Source',
    'Version',
    'Changed by',
    'Reason',
  ];
  const table = h(
    'table',
    { id: 'budgets' },
    h(
      'caption',
      {},
      canEdit() ? 'Budgets (edit one to change its cap)' : 'Budgets (read only for your role)',
    ),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        head.map((t) =>
          h(
            'th',
            { scope: 'col', class: ['Cap', 'Soft threshold', 'Spent', 'Version'].includes(t) ? 'num' : null },
            t,
          ),
        ),
        canEdit() ? h('th', { scope: 'col' }, 'Edit') : null,
      ),
    ),
    h(
      'tbody',
      {},
      list.map((b) =>
        h(
          'tr',
          { 'data-budget': `${b.app}/${b.period}` },
          h('th', { scope: 'row' }, label(b.app)),
          h('td', {}, b.period),
          h('td', { class: 'num' }, money(b.limit_minor)),
          h('td', { class: 'num' }, money(b.soft_minor)),
          h('td', { class: 'num' }, money(b.spent_minor)),
          h('td', {}, b.source),
          h('td', { class: 'num' }, b.version),
          h('td', {}, b.updated_by ?? '—'),
          h('td', {}, b.reason ?? '—'),
          canEdit() ? h('td', {}, editButton(b, editor, status)) : null,
        ),
      ),
    ),
  );
  page.replaceChildren(h('h1', {}, 'Budgets'), status, editor, table);
}

function editButton(b, editor, status) {
  const button = h(
    'button',
    { type: 'button', class: 'secondary', 'data-edit': `${b.app}/${b.period}` },
    `Edit ${label(b.app)} ${b.period}`,
  );
  button.addEventListener('click', () => editForm(b, editor, status));
  return button;
}

function editForm(b, editor, status, notice = '') {
  const cap = h('input', { id: 'cap', name: 'cap', inputmode: 'decimal', value: fromMinor(b.limit_minor) });
  const soft = h('input', { id: 'soft', name: 'soft', inputmode: 'decimal', value: fromMinor(b.soft_minor) });
  const reason = h('input', { id: 'reason', name: 'reason', required: true, maxlength: 500 });
  const error = h('p', { id: 'edit-error', class: 'error', role: 'alert' }, notice);
  const form = h(
    'form',
    { class: 'stack', id: 'budget-form', 'aria-labelledby': 'edit-title' },
    h('h2', { id: 'edit-title' }, `Edit the ${label(b.app)} ${b.period} budget`),
    h('p', { id: 'edit-version' }, `Editing version ${b.version} (source: ${b.source})`),
    h('label', { for: 'cap' }, 'Cap in roubles (empty: no cap)'),
    cap,
    h('label', { for: 'soft' }, 'Soft threshold in roubles (empty: none)'),
    soft,
    h('label', { for: 'reason' }, 'Reason (required, kept in the audit trail)'),
    reason,
    error,
    h('div', { class: 'pager' }, h('button', { type: 'submit' }, 'Save'), cancelButton(editor)),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const limitMinor = toMinor(cap.value);
    const softMinor = toMinor(soft.value);
    if (Number.isNaN(limitMinor) || Number.isNaN(softMinor)) {
      error.textContent = 'Amounts are roubles with at most two decimals, e.g. 1500 or 99.50.';
      return;
    }
    const res = await api(
      'PUT',
      `/admin/budgets/${encodeURIComponent(b.app)}/${b.period}`,
      { limit_minor: limitMinor, soft_minor: softMinor, reason: reason.value },
      { 'if-match': `"${b.version}"` },
    );
    if (res.status === 412) {
      const body = await res.json();
      const cur = body.error.details.current;
      const fresh = {
        ...b,
        limit_minor: cur.limit_minor,
        soft_minor: cur.soft_minor,
        source: cur.source,
        version: cur.version,
      };
      editForm(
        fresh,
        editor,
        status,
        `Someone changed this budget meanwhile; nothing was saved. Current values: cap ${money(cur.limit_minor)}, soft ${money(cur.soft_minor)}, version ${cur.version}.`,
      );
      return;
    }
    if (!res.ok) {
      error.textContent = await errorText(res);
      return;
    }
    const body = await res.json();
    await budgetsPage($('page'));
    $('budget-status').textContent =
      `Saved ${b.app} ${b.period}: cap ${money(body.budget.limit_minor)}, version ${body.budget.version}.`;
  });
  editor.replaceChildren(form);
  cap.focus();
}

function cancelButton(editor) {
  const b = h('button', { type: 'button', class: 'secondary' }, 'Cancel');
  b.addEventListener('click', () => editor.replaceChildren());
  return b;
}

// ---- Ledger -----------------------------------------------------------------------------------

const day = (ms) => new Date(ms).toISOString().slice(0, 10);
/** An ISO time as `2026-11-28 09:29:27 UTC`. */
const when = (iso) => `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;

async function ledgerPage(page, params) {
  const apps = Object.keys((await budgets()).budgets).filter((a) => a !== GLOBAL);
  const now = Date.now();
  const app = params.get('app') ?? '';
  const kind = params.get('kind') ?? '';
  const inn = params.get('inn') ?? '';
  const fromDay = params.get('from') ?? day(now - 30 * 86_400_000);
  const toDay = params.get('to') ?? day(now);
  const cursor = params.get('cursor') ?? '';
  const pageNo = Math.max(0, Number(params.get('page') ?? 0) || 0);
  const query = new URLSearchParams({
    from: `${fromDay}T00:00:00.000Z`,
    to: `${day(Date.parse(toDay) + 86_400_000)}T00:00:00.000Z`,
    // Times as this page shows them: UTC (the API's default zone is cost.timeZone).
    tz: 'UTC',
  });
  if (app) query.set('app', app);
  if (kind) query.set('kind', kind);
  if (inn) query.set('inn', inn);
  const select = h(
    'select',
    { id: 'ledger-app', name: 'app' },
    h('option', { value: '' }, 'All apps'),
    apps.map((a) => h('option', { value: a, selected: a === app }, a)),
  );
  const kindSelect = h(
    'select',
    { id: 'ledger-kind', name: 'kind' },
    h('option', { value: '' }, 'All kinds'),
    ['dossier', 'requisites', 'check', 'person'].map((k) =>
      h('option', { value: k, selected: k === kind }, k),
    ),
  );
  const innInput = h('input', {
    id: 'ledger-inn',
    name: 'inn',
    inputmode: 'numeric',
    pattern: '[0-9]{10}|[0-9]{12}',
    value: inn,
    size: 13,
  });
  const from = h('input', { id: 'ledger-from', name: 'from', type: 'date', value: fromDay });
  const to = h('input', { id: 'ledger-to', name: 'to', type: 'date', value: toDay });
  const form = h(
    'form',
    { class: 'inline', id: 'ledger-filter' },
    h('label', { for: 'ledger-app' }, 'App', select),
    h('label', { for: 'ledger-kind' }, 'Kind', kindSelect),
    h('label', { for: 'ledger-inn' }, 'INN', innInput),
    h('label', { for: 'ledger-from' }, 'From (UTC day)', from),
    h('label', { for: 'ledger-to' }, 'To (UTC day, inclusive)', to),
    h('button', { type: 'submit' }, 'Show'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const q = new URLSearchParams({ from: from.value, to: to.value });
    if (select.value) q.set('app', select.value);
    if (kindSelect.value) q.set('kind', kindSelect.value);
    if (innInput.value) q.set('inn', innInput.value.trim());
    location.hash = `#/ledger?${q}`;
  });
  // One page of the range at a time, oldest first, by the API's cursor (a range of any size
  // never loads into the browser at once).
  const url = cursor
    ? `/admin/ledger?${new URLSearchParams({ cursor, limit: String(LEDGER_PAGE), tz: 'UTC' })}`
    : `/admin/ledger?${query}&limit=${LEDGER_PAGE}`;
  const res = await api('GET', url);
  if (!res.ok) {
    page.replaceChildren(
      h('h1', {}, 'Ledger'),
      form,
      h('p', { class: 'error', role: 'alert' }, await errorText(res)),
    );
    return;
  }
  const data = await res.json();
  const csv = h(
    'a',
    { id: 'ledger-csv', href: `/admin/ledger?${query}&format=csv`, download: 'cpgw-ledger.csv' },
    'Download this range as CSV',
  );
  const link = (next, text) => {
    const q = new URLSearchParams(params);
    if (next) {
      q.set('cursor', next);
      q.set('page', String(pageNo + 1));
    } else {
      q.delete('cursor');
      q.delete('page');
    }
    return h('a', { href: `#/ledger?${q}` }, text);
  };
  page.replaceChildren(
    h('h1', {}, 'Ledger'),
    form,
    h(
      'p',
      { id: 'ledger-summary' },
      `This page: ${data.count} charges, ${money(data.total_minor)}${data.complete ? '' : '; more follow'}. `,
      csv,
    ),
    h(
      'table',
      { id: 'ledger' },
      h('caption', {}, `Charges, oldest first (page ${pageNo + 1}${data.complete ? ', the last' : ''})`),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Time', 'App', 'Operation', 'Kind', 'INN'].map((t) => h('th', { scope: 'col' }, t)),
          h('th', { scope: 'col', class: 'num' }, 'Amount'),
        ),
      ),
      h(
        'tbody',
        {},
        data.entries.map((e) =>
          h(
            'tr',
            {},
            h('td', {}, when(e.time)),
            h('td', {}, e.app),
            h('td', {}, e.operation),
            h('td', {}, e.kind),
            h('td', {}, e.inn),
            h('td', { class: 'num' }, money(e.amount_minor)),
          ),
        ),
      ),
    ),
    h(
      'nav',
      { class: 'pager', 'aria-label': 'Ledger pages' },
      pageNo > 0 ? link(null, 'First page') : null,
      data.next_cursor ? link(data.next_cursor, 'Next page') : null,
    ),
  );
}

// ---- Statements -------------------------------------------------------------------------------

/** A month's statement (GET /admin/statements/{YYYY-MM}): open or closed, per app and in total. */
async function statementsPage(page, params) {
  const now = new Date();
  const month = params.get('month') ?? `${now.getFullYear()}-${String(now.getMonth() + 1).padStart(2, '0')}`;
  const form = h(
    'form',
    { id: 'statement-form' },
    h('label', { for: 'st-month' }, 'Month'),
    h('input', { id: 'st-month', name: 'month', type: 'month', value: month, required: true }),
    h('button', { type: 'submit' }, 'Show'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    location.hash = `#/statements?month=${encodeURIComponent(String(new FormData(form).get('month')))}`;
  });
  const res = await api('GET', `/admin/statements/${encodeURIComponent(month)}`);
  if (!res.ok) {
    page.replaceChildren(
      h('h1', {}, 'Statements'),
      form,
      h('p', { class: 'error', role: 'alert' }, await errorText(res)),
    );
    return;
  }
  const st = await res.json();
  const rows = [...st.apps, { ...st.total, app: 'Total' }];
  const state = st.state === 'closed' ? 'closed (frozen)' : `open until ${st.closes_at}`;
  const table = h(
    'table',
    { id: 'statement' },
    h('caption', {}, `${st.month}: ${state}, days in ${st.time_zone}`),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col' }, 'App'),
        ['Charges', 'Spent', 'Saved', 'Requests', 'Without paying', 'Peak day'].map((t) =>
          h('th', { scope: 'col', class: 'num' }, t),
        ),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((p) =>
        h(
          'tr',
          { 'data-app': p.app },
          h('th', { scope: 'row' }, p.app),
          h('td', { class: 'num' }, String(p.charges.count)),
          h('td', { class: 'num' }, money(p.charges.amount_minor)),
          h('td', { class: 'num' }, money(p.savings.total_minor)),
          h('td', { class: 'num' }, String(p.requests.served)),
          h('td', { class: 'num' }, String(p.requests.unpaid)),
          h(
            'td',
            { class: 'num' },
            p.peak_day ? `${p.peak_day.day} (${money(p.peak_day.amount_minor)})` : '—',
          ),
        ),
      ),
    ),
  );
  const csv = h(
    'a',
    {
      href: `/admin/statements/${encodeURIComponent(st.month)}?format=csv`,
      download: `cpgw-statement-${st.month}.csv`,
    },
    'Download as CSV',
  );
  page.replaceChildren(h('h1', {}, 'Statements'), form, table, h('p', {}, csv));
}

// ---- Replicas ---------------------------------------------------------------------------------

/** Live replicas (GET /admin/replicas: heartbeats in the shared store) and this one's health. */
async function replicasPage(page) {
  const [res, health] = await Promise.all([
    api('GET', '/admin/replicas'),
    fetch('/healthz', { credentials: 'same-origin' }).then((r) => r.json()),
  ]);
  if (!res.ok) {
    page.replaceChildren(
      h('h1', {}, 'Replicas'),
      h('p', { class: 'error', role: 'alert' }, await errorText(res)),
    );
    return;
  }
  const data = await res.json();
  const agreement = data.agree
    ? `All ${data.count} live replicas run the same configuration and version.`
    : `Replicas disagree: ${Object.keys(data.config_hashes).length} configuration hashes, ${Object.keys(data.versions).length} versions.`;
  const table = h(
    'table',
    {},
    h('caption', {}, 'Live replicas (a heartbeat every 10 s; gone after 30 s of silence)'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['Replica', 'Host', 'Version', 'Config hash', 'Started', 'Last seen'].map((t) =>
          h('th', { scope: 'col' }, t),
        ),
      ),
    ),
    h(
      'tbody',
      {},
      data.replicas.map((r) =>
        h(
          'tr',
          { 'data-replica': r.id },
          h('th', { scope: 'row' }, r.id === data.answered_by ? `${r.id} (this one)` : r.id),
          h('td', {}, r.host),
          h('td', {}, r.version),
          h('td', {}, h('code', {}, r.config_hash.slice(0, 12))),
          h('td', {}, r.started_at),
          h('td', {}, r.last_seen_at),
        ),
      ),
    ),
  );
  const healthList = h(
    'dl',
    { class: 'health' },
    Object.entries(health).flatMap(([k, v]) => [h('dt', {}, k), h('dd', { 'data-field': k }, String(v))]),
  );
  page.replaceChildren(
    h('h1', {}, 'Replicas'),
    h('p', { 'data-field': 'agree', role: 'status' }, agreement),
    table,
    h('h2', {}, 'This replica: store and upstream health (/healthz)'),
    healthList,
  );
}

// ---- Audit trail ------------------------------------------------------------------------------

async function auditPage(page, params) {
  const cursors = (params.get('trail') ?? '').split(',').filter(Boolean);
  const q = new URLSearchParams({ limit: String(AUDIT_PAGE) });
  if (cursors.length) q.set('cursor', cursors[cursors.length - 1]);
  const res = await api('GET', `/admin/audit?${q}`);
  if (!res.ok) {
    page.replaceChildren(
      h('h1', {}, 'Audit trail'),
      h('p', { class: 'error', role: 'alert' }, await errorText(res)),
    );
    return;
  }
  const data = await res.json();
  /** An entry's before/after: amounts (`*_minor`) in roubles, the rest as it is. */
  const figures = (v) => {
    if (v === null || typeof v !== 'object') return v === null ? '—' : String(v);
    return Object.entries(v)
      .map(([k, x]) =>
        k.endsWith('_minor')
          ? `${k.slice(0, -6)}: ${money(x)}`
          : `${k}: ${typeof x === 'object' ? JSON.stringify(x) : x}`,
      )
      .join(', ');
  };
  const go = (trail, text) =>
    h('a', { href: `#/audit${trail.length ? `?trail=${trail.join(',')}` : ''}` }, text);
  page.replaceChildren(
    h('h1', {}, 'Audit trail'),
    h(
      'table',
      { id: 'audit' },
      h('caption', {}, `Changes, oldest first (page ${cursors.length + 1})`),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Time', 'Actor', 'Role', 'Action', 'Target', 'Before', 'After', 'Reason'].map((t) =>
            h('th', { scope: 'col' }, t),
          ),
        ),
      ),
      h(
        'tbody',
        {},
        data.entries.map((e) =>
          h(
            'tr',
            { 'data-audit': e.id },
            h('td', {}, when(e.time)),
            h('td', {}, e.actor),
            h('td', {}, e.role),
            h('td', {}, e.action),
            h('td', {}, e.target),
            h('td', {}, figures(e.before)),
            h('td', {}, figures(e.after)),
            h('td', {}, e.reason ?? '—'),
          ),
        ),
      ),
    ),
    h(
      'nav',
      { class: 'pager', 'aria-label': 'Audit pages' },
      cursors.length ? go(cursors.slice(0, -1), 'Previous page') : null,
      data.next_cursor ? go([...cursors, data.next_cursor], 'Next page') : null,
    ),
  );
}

// ---- Routing and start ------------------------------------------------------------------------

const PAGES = {
  overview,
  budgets: budgetsPage,
  ledger: ledgerPage,
  statements: statementsPage,
  audit: auditPage,
  replicas: replicasPage,
};

async function route() {
  if (!session) return;
  const [path, query] = location.hash.replace(/^#\/?/, '').split('?');
  const name = Object.hasOwn(PAGES, path) ? path : 'overview';
  for (const a of document.querySelectorAll('#nav a'))
    if (a.getAttribute('href') === `#/${name}`) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  const page = $('page');
  page.hidden = false;
  page.setAttribute('aria-busy', 'true');
  try {
    await PAGES[name](page, new URLSearchParams(query ?? ''));
  } catch (err) {
    if (!(err instanceof SignedOut))
      page.replaceChildren(h('p', { class: 'error', role: 'alert' }, String(err.message ?? err)));
  } finally {
    page.removeAttribute('aria-busy');
    page.setAttribute('data-page', name);
  }
}

$('signin-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const input = /** @type {HTMLInputElement} */ ($('token'));
  const token = input.value;
  input.value = '';
  const res = await fetch('/console/session', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    credentials: 'same-origin',
    body: JSON.stringify({ token }),
  });
  if (res.status === 201) signedIn(await res.json());
  else
    $('signin-error').textContent = res.status === 401 ? 'This token is not accepted.' : await errorText(res);
});

$('signout').addEventListener('click', async () => {
  try {
    await api('DELETE', '/console/session');
  } catch {
    // Already signed out: the sign-in page is shown either way.
  }
  history.replaceState(null, '', '#');
  showSignIn('Signed out.');
});

window.addEventListener('hashchange', route);

const res = await fetch('/console/session', { credentials: 'same-origin' });
if (res.ok) signedIn(await res.json());
else showSignIn();
