// Small DOM and formatting helpers shared by the views. Text always goes in as text, never as
// HTML, so names, labels and error messages from the API cannot inject markup. Nor can they
// reorder the page: the explicit bidi controls (embeddings, overrides, isolates) in any text
// shown are drawn as U+FFFD, and user text goes in a <bdi> (userText) so that its direction
// stays its own.

const BIDI_CONTROLS = /[\u202a-\u202e\u2066-\u2069]/g;

// `s` as a string with its bidi controls made visible (a name "abc\u202eevil" cannot show
// as "abclive").
export function visibleText(s) {
  return String(s).replace(BIDI_CONTROLS, '\ufffd');
}

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else if (v === true) el.setAttribute(k, '');
    else if (k === 'title') el.setAttribute(k, visibleText(v));
    else el.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : visibleText(c));
  }
  return el;
}

// A name, label, description or other text that a user wrote, isolated from the text around it
// (a right-to-left name does not pull a following "=value" or count into its run).
export function userText(s, attrs = {}) {
  return h('bdi', attrs, s);
}

// A number to `digits` significant digits, without exponent for everyday magnitudes.
export function sig(x, digits = 4) {
  if (x === null || x === undefined || !Number.isFinite(x)) return '—';
  if (x === 0) return '0';
  const mag = Math.floor(Math.log10(Math.abs(x)));
  if (mag >= 9 || mag < -4) return x.toExponential(digits - 1);
  const decimals = Math.max(0, digits - 1 - mag);
  return x.toFixed(decimals);
}

export function fmtTime(us) {
  if (us === null || us === undefined || !Number.isFinite(us)) return '—';
  if (us >= 1e6) return `${sig(us / 1e6)} s`;
  if (us >= 1e3) return `${sig(us / 1e3)} ms`;
  return `${sig(us)} µs`;
}

export function fmtBytes(b) {
  if (!Number.isFinite(b)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (b >= 1024 && i < units.length - 1) { b /= 1024; ++i; }
  return `${sig(b, 3)} ${units[i]}`;
}

export function age(iso) {
  if (!iso) return '—';
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return `${Math.round(s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(iso).toLocaleString();
}

export function duration(fromIso, toIso) {
  if (!fromIso) return '—';
  const ms = (toIso ? Date.parse(toIso) : Date.now()) - Date.parse(fromIso);
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${sig(ms / 1000, 3)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

export function statusBadge(status, title) {
  return h('span', {class: `badge status-${status}`, title}, status.replace('_', ' '));
}

export function progressBar(p) {
  const pct = p.total ? (100 * p.done) / p.total : 0;
  const text = `${p.done}/${p.total}` + (p.failed ? ` · ${p.failed} failed` : '');
  return h('div', {class: 'progress', title: `${pct.toFixed(1)}%`},
           h('div', {class: 'bar' + (p.failed ? ' has-failed' : ''), style: `width:${pct}%`}),
           h('span', {}, text));
}

export function labelChips(labels) {
  return h('span', {class: 'labels'},
           Object.entries(labels || {}).map(([k, v]) => h('span', {class: 'chip', title: `${k}=${v}`},
                                                           userText(k), '=', userText(v))));
}

// An API error: its type and message, and the fields it names. A message of several lines (a
// compiler's log, after its first line) keeps its lines and columns, as a terminal shows them.
export function errorBox(err) {
  const message = String(err.message ?? '');
  const cut = message.indexOf('\n');
  const box = h('div', {class: 'error-box', role: 'alert'},
                h('strong', {}, err.type ? `${err.type}: ` : 'error: '), cut < 0 ? message : message.slice(0, cut));
  if (cut >= 0) box.append(h('pre', {class: 'error-log'}, message.slice(cut + 1)));
  if (Array.isArray(err.details) && err.details.length) {
    box.append(h('ul', {}, err.details.map((d) =>
      h('li', {}, h('code', {}, d.field || ''), ' ', d.message || JSON.stringify(d)))));
  }
  return box;
}

export function emptyState(title, ...body) {
  return h('div', {class: 'empty'}, h('h3', {}, title), ...body);
}

// Calls fn at most once per `ms`, always with the latest arguments, and once more after a burst.
// Runs `fn` in a task of its own, after the tasks queued now (input among them); unlike a timer,
// not held back to one a second in a background tab.
const taskChannel = new MessageChannel();
const taskQueue = [];
taskChannel.port1.onmessage = () => taskQueue.shift()();
export function nextTask(fn) {
  taskQueue.push(fn);
  taskChannel.port2.postMessage(0);
}

export function throttle(fn, ms) {
  let last = 0, timer = null, pending = null;
  return (...args) => {
    pending = args;
    const wait = last + ms - Date.now();
    if (wait <= 0 && !timer) {
      last = Date.now();
      fn(...pending);
      return;
    }
    if (!timer) {
      timer = setTimeout(() => {
        timer = null;
        last = Date.now();
        fn(...pending);
      }, Math.max(0, wait));
    }
  };
}

// "#/jobs/3?x=N&metric=tflops" -> path "#/jobs/3" and its query.
export function splitHash(hash = location.hash) {
  const q = hash.indexOf('?');
  return q < 0 ? [hash, new URLSearchParams()] : [hash.slice(0, q), new URLSearchParams(hash.slice(q + 1))];
}

// Rewrites the current view's query without a navigation (selections stay URL-addressable).
export function setQuery(params) {
  const [path] = splitHash();
  const q = new URLSearchParams(params).toString();
  history.replaceState(null, '', q ? `${path}?${q}` : path);
}

// Resolves once ECharts (a deferred script after app.js, see index.html) has run.
export function whenECharts() {
  if (window.echarts) return Promise.resolve(window.echarts);
  return new Promise((resolve, reject) => {
    const script = document.getElementById('echarts-script');
    script.addEventListener('load', () => resolve(window.echarts), {once: true});
    script.addEventListener('error', () => reject(new Error('the chart library did not load')), {once: true});
  });
}
