// Compare: two or more jobs joined on the sweep parameters they share; per shared-parameter
// point, each job's median and its speedup over a chosen baseline job, as a table and a chart.
// A job with parameters the others lack contributes its point of the highest throughput per key;
// where matched points do different work, speedups are of throughput (time per FLOP, else per
// byte), not of time. A point is faster or slower than the baseline's only when their medians'
// 95% intervals do not overlap; otherwise it is the same. What the join means (which field of each kernel a parameter sets) is
// said above the results, as a warning when the jobs use the names differently.

import {get, getRows} from './api.js';
import {VERDICT_COLORS, compareOption} from './charts.js';
import {emptyState, errorBox, fmtTime, h, nextTask, setQuery, sig, statusBadge, userText, whenECharts} from './dom.js';

// The flags that void a point's score (api/openapi.yaml, ResultRow.flags; engine/fitness.cpp):
// a wrong answer or a time under the physical floor. Such a point is never a job's best, and
// its speedup is not a kernel's.
const VOIDING = new Set(['faster_than_roofline', 'timed_output_mismatch', 'output_not_written', 'verification_failed',
                         'precision_mismatch', 'timeout', 'device_fault', 'input_modified', 'out_of_bounds_write',
                         'low_signal_reference', 'uneven_launches']);
function voidingFlags(r) {
  return (r.flags || []).filter((f) => VOIDING.has(f));
}

// The members of a result row this view reads: a sixth of each row's bytes, so that two jobs of
// 100,000 points load as 41 MB rather than 272 (and parse in a fraction of the time).
const ROW_FIELDS = ['params', 'name', 'status', 'flags', 'time_us.median', 'time_us.ci95_low', 'time_us.ci95_high',
                    'metrics.flops', 'metrics.bytes'].join(',');

// Matched points listed a page at a time: a table of 100,000 rows is seconds of the browser's time.
const COMPARE_PAGE = 500;

// Rows joined a task, in slices of this many (10-40 ms on a 2-core VM).
const JOIN_SLICE = 10000;

// Runs work(start, end) over [0, n) a slice a task, each marked `compare-join` (the browser test
// counts their tasks), the first too, since what came before may have been a slice; false where
// `stale()` said a later load took over in between.
async function inSlices(n, stale, work) {
  for (let start = 0; start < n; start += JOIN_SLICE) {
    await new Promise((resolve) => nextTask(resolve));
    if (stale()) return false;
    performance.mark('compare-join');
    work(start, Math.min(n, start + JOIN_SLICE));
  }
  return true;
}

function geomean(xs) {
  const v = xs.filter((x) => x > 0);
  return v.length ? Math.exp(v.reduce((s, x) => s + Math.log(x), 0) / v.length) : NaN;
}

// The median's 95% interval of a row; null for a row without one (an import's summary, fewer
// than 6 samples), which is then neither faster nor slower than another.
function interval(r) {
  const t = r.time_us;
  return Number.isFinite(t.ci95_low) && Number.isFinite(t.ci95_high) ? [t.ci95_low, t.ci95_high] : null;
}

// The work of two matched points, in one unit: their FLOPs, else their bytes, else none (1).
// They differ where a job sweeps a parameter the others do not: its point of the highest
// throughput may be another problem size (a GEMM with 16 times the K), whose longer time is not
// a slower kernel.
function workOf(base, other) {
  const mb = base.metrics || {}, mo = other.metrics || {};
  if (mb.flops > 0 && mo.flops > 0) return [mb.flops, mo.flops];
  if (mb.bytes > 0 && mo.bytes > 0) return [mb.bytes, mo.bytes];
  return [1, 1];
}

// `other` against `base`: its speedup (of time per unit of work: the ratio of the medians where
// both do the same work), and faster, slower, or the same within both intervals.
function compareRows(base, other) {
  const [wb, wo] = workOf(base, other);
  const scale = wb / wo;  // the other's time for the baseline's work, at its throughput
  const speedup = base.time_us.median / (other.time_us.median * scale);
  const b = interval(base), o = interval(other);
  if (!b || !o) return {speedup, sameWork: wb === wo, verdict: 'same'};
  const [bl, bh] = b, [ol, oh] = o.map((t) => t * scale);
  return {speedup, sameWork: wb === wo, verdict: oh < bl ? 'faster' : ol > bh ? 'slower' : 'same'};
}

// The fields of a job's kernel that a sweep parameter sets (`kernel.m`, `kernel.grid[0]`,
// `kernel.compile_options[1]`): where the name appears as a word in an expression.
function usesOf(spec, name) {
  const word = new RegExp(`(^|[^A-Za-z0-9_])${name}([^A-Za-z0-9_]|$)`);
  const out = [];
  const walk = (v, path) => {
    if (typeof v === 'string') {
      if (path !== 'kernel.source' && path !== 'kernel.entry' && word.test(v)) out.push(path);
    } else if (Array.isArray(v)) {
      v.forEach((x, i) => walk(x, `${path}[${i}]`));
    } else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) if (k !== 'name' && k !== 'op') walk(x, `${path}.${k}`);
    }
  };
  walk((spec || {}).kernel, 'kernel');
  return out;
}

// A job's kernel in a few words.
function kernelText(job) {
  const k = (job.spec || {}).kernel || {};
  if (job.engine === 'import') return `imported ${((job.spec || {}).import || {}).format || ''} results`;
  if (k.op === 'gemm') return `gemm ${k.dtype} (${k.impl}), m=${k.m} n=${k.n} k=${k.k}`;
  if (k.op === 'stream') return `stream ${k.variant} ${k.dtype}, n=${k.n}`;
  if (k.op === 'custom') return `custom kernel ${k.entry}`;
  return job.op;
}

// The fields of the problem (not of the implementation: impl, source, entry, launch) that no
// sweep parameter sets and that differ between the jobs, as `kernelscan compare` lists them:
// for GEMM and STREAM jobs the dtype, sizes, layouts and scalars; for custom kernels the element
// types of their buffers.
function problemDifferences(jobs, ops) {
  if (ops.size !== 1) return [];
  const op = [...ops][0];
  const kernelOf = (j) => (j.spec || {}).kernel || {};
  // Fields a sweep parameter sets are left out: a shared one joins the points, another one's
  // best point stands for the job, compared by throughput.
  const swept = new Set(jobs.flatMap((j) => Object.keys((j.spec || {}).sweep || {}).flatMap((n) => usesOf(j.spec, n))));
  const line = (what, of) => {
    const values = jobs.map((j) => of(kernelOf(j)));
    if (new Set(values).size < 2) return null;
    return `${what} is ` + jobs.map((j, i) => `${values[i]} in #${j.id}`).join('; ');
  };
  const out = [];
  if (op === 'gemm' || op === 'stream') {
    for (const f of ['dtype', 'm', 'n', 'k', 'layout_a', 'layout_b', 'alpha', 'beta', 'variant', 'scalar']) {
      if (swept.has(`kernel.${f}`)) continue;
      const l = line(`kernel.${f}`, (k) => (f in k ? String(k[f]) : 'the default'));
      if (l) out.push(l);
    }
  } else if (op === 'custom') {
    const l = line('the element type of the buffers', (k) => {
      const types = new Set((Array.isArray(k.args) ? k.args : [])
        .filter((a) => a && !a.local && typeof a.type === 'string' && a.type.endsWith('*'))
        .map((a) => a.type.slice(0, -1)));
      return types.size ? [...types].sort().join(', ') : 'none';
    });
    if (l) out.push(l);
  }
  return out;
}

// What joining `jobs` on `shared` means, said above the results: a note, or a warning when the
// jobs run different ops, differ in a field of the problem, or use a shared name for different
// fields.
function joinNotice(jobs, shared, byName, base) {
  const list = h('ul', {}, jobs.map((j) => h('li', {}, h('a', {href: `#/jobs/${j.id}`}, `#${j.id} `, userText(j.name)), `: ${kernelText(j)}`)));
  if (byName) {
    return h('div', {class: 'note-box', id: 'compare-join'},
             h('strong', {}, 'Matched by kernel name: '), 'each kernel is compared with the kernel of the same name in every job.', list);
  }
  const ops = new Set(jobs.map((j) => j.op));
  const differ = shared.filter((n) => new Set(jobs.map((j) => usesOf(j.spec, n).join(' '))).size > 1);
  const problem = problemDifferences(jobs, ops);
  if (ops.size > 1 || differ.length || problem.length) {
    const why = [];
    if (ops.size > 1) why.push(h('li', {}, `they run different ops (${[...ops].join(', ')})`));
    for (const line of problem) why.push(h('li', {}, line));
    for (const n of differ) {
      why.push(h('li', {}, `${n} sets ` + jobs.map((j) => `${usesOf(j.spec, n).join(', ') || 'nothing'} in #${j.id}`).join('; ')));
    }
    return h('div', {class: 'warning-box', id: 'compare-join', role: 'note'},
             h('strong', {}, `Matched on the parameter names ${shared.join(', ')} only. `),
             'These jobs may not measure the same problem at a matched point:', h('ul', {}, why), list);
  }
  return h('div', {class: 'note-box', id: 'compare-join'},
           h('strong', {}, `Matched on ${shared.join(', ')}: `),
           `each point of #${base.id} is compared with the point of every other job that has the same ${shared.join(', ')}, `,
           'which each job uses for the same fields. Faster or slower means the 95% intervals of the medians do not overlap; ',
           'otherwise the point is the same.', list);
}

export function mount(root, {query}) {
  const ids = (query.get('jobs') || '').split(',').map((s) => s.trim()).filter(Boolean);
  let base = query.get('base') || ids[0] || '';
  let chart = null, disposed = false, loads = 0;
  // One chart for the view's life: a reload (another baseline, a job that ended) shows the chart
  // it has until its own is drawn, a task after its table.
  const chartEl = h('div', {class: 'chart wide', id: 'chart-compare'});
  const input = h('input', {id: 'compare-jobs', value: ids.join(', '), placeholder: 'job ids, e.g. 12, 15, 17', size: 30});
  const form = h('form', {class: 'toolbar', onsubmit: (ev) => {
    ev.preventDefault();
    const list = input.value.split(/[\s,]+/).filter(Boolean);
    location.hash = `#/compare?jobs=${list.join(',')}`;
  }}, h('label', {}, 'Jobs ', input), h('button', {type: 'submit'}, 'Compare'));
  const body = h('div');
  root.append(h('div', {class: 'view-head'}, h('h2', {}, 'Compare jobs')), form, body);

  async function recentPicker() {
    try {
      const page = await get('/api/v1/jobs?status=succeeded&limit=20');
      if (!page.jobs.length) return emptyState('No finished jobs to compare yet.', h('p', {}, h('a', {href: '#/submit'}, 'Submit one')));
      return h('div', {}, h('p', {class: 'muted'}, 'Pick two or more recent finished jobs, or type their ids above:'),
        h('ul', {class: 'pick'}, page.jobs.map((j) => h('li', {}, h('label', {},
          h('input', {type: 'checkbox', value: String(j.id), onchange: () => {
            const picked = [...root.querySelectorAll('.pick input:checked')].map((c) => c.value);
            input.value = picked.join(', ');
          }}), ` #${j.id} `, userText(j.name), ' ', h('span', {class: 'muted'}, `${j.op}, ${j.progress.total} points`))))));
    } catch (e) {
      return errorBox(e);
    }
  }

  async function load() {
    const round = ++loads;  // a later load (another baseline, a job that ended) takes over
    const stale = () => disposed || round !== loads;
    if (ids.length < 2) {
      body.replaceChildren(h('p', {class: 'muted'}, ids.length ? 'Add at least one more job.' : ''), await recentPicker());
      return;
    }
    // A reload (a job of the comparison ended) keeps the current table until the new one is
    // ready, rather than flashing "Loading…".
    if (!body.querySelector('#compare-table')) body.replaceChildren(h('p', {class: 'muted'}, 'Loading…'));
    let jobs;
    try {
      jobs = await Promise.all(ids.map(async (id) => {
        const job = await get(`/api/v1/jobs/${encodeURIComponent(id)}`).catch((e) => {
          throw e.status === 404 ? {type: 'not_found', message: `There is no job ${id}.`} : e;
        });
        return {job, rows: await getRows(`/api/v1/jobs/${job.id}/results?format=jsonl&fields=${ROW_FIELDS}`)};
      }));
    } catch (e) {
      if (!stale()) body.replaceChildren(errorBox(e));
      return;
    }
    if (stale()) return;
    // Imports number their kernels in their own order (by time): match them by kernel name.
    const byName = jobs.every((j) => j.job.engine === 'import');
    const names = byName ? jobs.map(() => ['kernel']) : jobs.map((j) => Object.keys(j.job.spec.sweep || {}));
    const shared = names[0].filter((n) => names.every((ns) => ns.includes(n)));
    if (!shared.length) {
      body.replaceChildren(errorBox({type: 'nothing_shared', message: 'These jobs share no sweep parameter, so their points cannot be matched.'}));
      return;
    }
    // key -> each job's best ok row there: of the highest throughput (the least time per FLOP,
    // else per byte, else the fastest), as the job's best point is, not the smallest problem,
    // and, as it is, not a point whose flags void its score where the key has another
    const cost = (r) => {
      const m = r.metrics || {};
      const work = m.flops > 0 ? m.flops : m.bytes > 0 ? m.bytes : 1;
      return r.time_us.median / work;
    };
    // The join goes a slice of rows a task (two 100,000-point jobs took 0.3 s in one), so that a
    // click or the live stream is answered between them; a later load stops it.
    const sound = (x) => voidingFlags(x).length === 0;
    const perJob = [];
    for (const {rows} of jobs) {
      const m = new Map();
      const joined = await inSlices(rows.length, stale, (start, end) => {
        for (let i = start; i < end; ++i) {
          const r = rows[i];
          if (r.status !== 'ok') continue;
          const key = byName ? r.name : shared.map((n) => r.params[n]).join('|');
          const cur = m.get(key);
          if (!cur || (sound(r) && !sound(cur)) || (sound(r) === sound(cur) && cost(r) < cost(cur))) m.set(key, r);
        }
      });
      if (!joined) return;
      perJob.push(m);
    }
    const keys = [...perJob[0].keys()].filter((k) => perJob.every((m) => m.has(k)));
    const parts = (k) => (byName ? [k] : k.split('|'));
    if (byName) {
      keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    } else {
      // Each key's numbers once, not once a comparison.
      const numbers = new Map(keys.map((k) => [k, k.split('|').map(Number)]));
      keys.sort((a, b) => {
        const x = numbers.get(a), y = numbers.get(b);
        for (let i = 0; i < x.length; ++i) if (x[i] !== y[i]) return x[i] - y[i];
        return 0;
      });
    }
    // A job without a successful point has nothing to match: that is what to say of it, and,
    // of one still queued or running, that it has none yet (the view reloads when it ends).
    const emptyJobs = jobs.filter((j, i) => !perJob[i].size).map((j) => j.job);
    if (emptyJobs.length) {
      const joined = (list) => {
        const named = list.map((j) => `job ${j.id}`);
        return named.length === 1 ? named[0] : `${named.slice(0, -1).join(', ')} and ${named[named.length - 1]}`;
      };
      const has = (list) => (list.length === 1 ? 'has' : 'have');
      const pending = emptyJobs.filter((j) => j.status === 'queued' || j.status === 'running');
      const ended = emptyJobs.filter((j) => !pending.includes(j));
      const parts = [];
      if (ended.length) parts.push(`${joined(ended)} ${has(ended)} no successful point to compare.`);
      if (pending.length) {
        parts.push(`${joined(pending)} ${has(pending)} no successful point yet (${pending.map((j) => j.status).join(', ')}); `
                   + 'the comparison is made again when it ends.');
      }
      const message = parts.join(' ');
      body.replaceChildren(errorBox({type: 'nothing_to_compare', message: message[0].toUpperCase() + message.slice(1)}));
      return;
    }
    if (!keys.length) {
      body.replaceChildren(errorBox({type: 'nothing_shared', message: `No point has the same ${shared.join(', ')} in every job.`}));
      return;
    }
    let b = jobs.findIndex((j) => String(j.job.id) === String(base));
    if (b < 0) b = 0;
    base = String(jobs[b].job.id);
    const others = jobs.map((j, i) => i).filter((i) => i !== b);
    const label = (k) => (byName ? k : k.split('|').map((v, i) => `${shared[i]}=${v}`).join(', '));
    // Each matched point's comparisons, and its name for the chart (0.08 s for 100,000).
    const pairs = others.map(() => new Array(keys.length));
    const labels = new Array(keys.length);
    const compared = await inSlices(keys.length, stale, (start, end) => {
      others.forEach((i, o) => {
        for (let row = start; row < end; ++row) pairs[o][row] = compareRows(perJob[b].get(keys[row]), perJob[i].get(keys[row]));
      });
      for (let row = start; row < end; ++row) labels[row] = label(keys[row]);
    });
    if (!compared) return;
    const speedups = pairs.map((p) => p.map((x) => x.speedup));
    const verdicts = pairs.map((p) => p.map((x) => x.verdict));
    const workDiffers = pairs.some((p) => p.some((x) => !x.sameWork));
    // Pairs of which either point's flags void its score (its speedup is not a kernel's).
    const voided = others.map((i) => keys.filter((k) => voidingFlags(perJob[b].get(k)).length || voidingFlags(perJob[i].get(k)).length).length);
    const anyVoided = voided.some((n) => n > 0);

    const baseSelect = h('select', {id: 'compare-base', 'aria-label': 'baseline'},
                         jobs.map((j) => h('option', {value: String(j.job.id)}, `#${j.job.id} ${j.job.name}`)));
    baseSelect.value = base;
    baseSelect.addEventListener('change', () => {
      base = baseSelect.value;
      setQuery([['jobs', ids.join(',')], ['base', base]]);
      load();
    });
    const extra = jobs.filter((j, i) => names[i].length > shared.length);
    const summary = h('table', {class: 'data narrow', id: 'compare-summary'},
      h('thead', {}, h('tr', {}, h('th', {}, 'job'), h('th', {}, 'status'), h('th', {class: 'num'}, 'geomean speedup'),
                                 h('th', {class: 'num'}, 'faster at'), h('th', {class: 'num'}, 'slower at'),
                                 h('th', {class: 'num', title: 'within the 95% intervals of both medians'}, 'same at'),
                                 h('th', {class: 'num'}, 'best'), h('th', {class: 'num'}, 'worst'),
                                 anyVoided ? h('th', {class: 'num', title: 'points of this job or the baseline whose flags void their score: a wrong answer, or a time under the physical floor'}, 'voided at') : '')),
      h('tbody', {}, others.map((i, o) => {
        const s = speedups[o], v = verdicts[o];
        const count = (x) => `${v.filter((y) => y === x).length} of ${v.length}`;
        return h('tr', {}, h('td', {}, h('a', {href: `#/jobs/${jobs[i].job.id}`}, `#${jobs[i].job.id} `, userText(jobs[i].job.name))),
                 h('td', {}, statusBadge(jobs[i].job.status)),
                 h('td', {class: 'num'}, `${sig(geomean(s), 3)}×`),
                 h('td', {class: 'num good'}, count('faster')),
                 h('td', {class: 'num bad'}, count('slower')),
                 h('td', {class: 'num same'}, count('same')),
                 h('td', {class: 'num'}, `${sig(Math.max(...s), 3)}×`),
                 h('td', {class: 'num'}, `${sig(Math.min(...s), 3)}×`),
                 anyVoided ? h('td', {class: 'num bad'}, `${voided[o]} of ${v.length}`) : '');
      })));
    // Every matched point, a page at a time, sorted by any column (by the parameters at first).
    const columns = [
      ...shared.map((n, p) => ({label: n, num: !byName, get: (row) => (byName ? keys[row] : Number(parts(keys[row])[p]))})),
      ...jobs.map((j, i) => ({label: `#${j.job.id} median`, num: true, get: (row) => perJob[i].get(keys[row]).time_us.median})),
      ...others.map((i, o) => ({label: `#${jobs[i].job.id} speedup`, num: true, get: (row) => speedups[o][row]})),
    ];
    const table = {sort: null, dir: 1, page: 0, order: keys.map((k, row) => row)};
    const tbody = h('tbody');
    const head = h('tr', {}, columns.map((c, col) => h('th', {class: `${c.num ? 'num ' : ''}sortable`, dataset: {col: String(col)},
      title: 'sort by this column (again: the other way)', onclick: () => sortBy(col)}, c.label)));
    const pageText = h('span', {class: 'muted', id: 'compare-page'});
    const prev = h('button', {type: 'button', class: 'ghost small', id: 'compare-prev', onclick: () => turn(-1)}, '‹ previous');
    const next = h('button', {type: 'button', class: 'ghost small', id: 'compare-next', onclick: () => turn(1)}, 'next ›');
    const detail = h('div', {},
      h('div', {class: 'table-scroll tall'}, h('table', {class: 'data', id: 'compare-table'}, h('thead', {}, head), tbody)),
      keys.length > COMPARE_PAGE ? h('div', {class: 'toolbar pager'}, prev, pageText, next) : '');
    function sortBy(col) {
      table.dir = table.sort === col ? -table.dir : 1;
      table.sort = col;
      const get = columns[col].get, dir = table.dir;
      // Ties keep the order they had, so that sorting by N and then by M lists M, then N within each M;
      // a point without a value goes last.
      const keyed = table.order.map((row, at) => [get(row), row, at]);
      const missing = (v) => typeof v === 'number' && !Number.isFinite(v);
      keyed.sort((a, b) => (a[0] === b[0] ? a[2] - b[2] : missing(a[0]) ? 1 : missing(b[0]) ? -1 : (a[0] < b[0] ? -1 : 1) * dir));
      table.order = keyed.map((x) => x[1]);
      table.page = 0;
      drawPage();
    }
    function turn(step) {
      table.page = Math.min(Math.max(0, table.page + step), Math.ceil(keys.length / COMPARE_PAGE) - 1);
      drawPage();
    }
    function drawPage() {
      head.querySelectorAll('th').forEach((th) => {
        th.classList.toggle('sorted-asc', Number(th.dataset.col) === table.sort && table.dir > 0);
        th.classList.toggle('sorted-desc', Number(th.dataset.col) === table.sort && table.dir < 0);
      });
      const from = table.page * COMPARE_PAGE, to = Math.min(keys.length, from + COMPARE_PAGE);
      pageText.textContent = `points ${from + 1}–${to} of ${keys.length}`;
      prev.disabled = from === 0;
      next.disabled = to === keys.length;
      tbody.replaceChildren(...table.order.slice(from, to).map((row) => {
        const k = keys[row];
        return h('tr', {},
          parts(k).map((v) => h('td', {class: byName ? 'name' : 'num', title: byName ? v : undefined}, v)),
          jobs.map((j, i) => {
            const r = perJob[i].get(k), flags = voidingFlags(r);
            return flags.length
              ? h('td', {class: 'num voided', title: `flagged ${flags.join(', ')}: its score is void`}, fmtTime(r.time_us.median), ` ⚠ ${flags.join(', ')}`)
              : h('td', {class: 'num'}, fmtTime(r.time_us.median));
          }),
          others.map((i, o) => {
            const v = verdicts[o][row];
            const title = pairs[o][row].sameWork ? v : `${v}, in throughput: the two points do different work`;
            return h('td', {class: `num ${v === 'faster' ? 'good' : v === 'slower' ? 'bad' : 'same'}`, title},
                     `${sig(speedups[o][row], 3)}×`, v === 'same' ? ' same' : '');
          }));
      }));
      detail.querySelector('.table-scroll').scrollTop = 0;
    }
    drawPage();
    body.replaceChildren(
      joinNotice(jobs.map((j) => j.job), shared, byName, jobs[b].job),
      h('div', {class: 'toolbar'}, h('label', {}, 'Baseline ', baseSelect),
        h('span', {class: 'muted'}, `matched on ${shared.join(', ')}: ${keys.length} point${keys.length === 1 ? '' : 's'} in every job` +
          (extra.length ? `; for ${extra.map((j) => `#${j.job.id}`).join(', ')}, the point of the highest throughput per match` : '') +
          (workDiffers ? '; where matched points do different work (another problem size), speedups are of throughput: time per FLOP, else per byte' : ''))),
      summary,
      h('section', {class: 'chart-box'}, h('h3', {}, 'Speedup over the baseline',
        others.length === 1 ? h('span', {class: 'muted'}, ' ', ...['faster', 'slower', 'same'].map((v) =>
          h('span', {class: 'legend-key'}, h('span', {class: 'swatch', style: `background:${VERDICT_COLORS[v]}`}), v))) : ''), chartEl),
      h('h3', {}, 'Per point'), detail);
    // The chart is drawn in a task of its own, after the join and the table (two 100,000-point
    // jobs took 0.6 s in one): a click in between is answered.
    await whenECharts();
    await new Promise((resolve) => nextTask(resolve));
    if (stale()) return;
    if (!chart) chart = echarts.init(chartEl);
    chart.setOption(compareOption({keys: labels, jobs: others.map((i) => jobs[i].job), speedups, verdicts,
                                   animate: keys.length < 500}), {notMerge: true});
    root.dataset.chartsReady = '1';
  }
  load();
  const onResize = () => chart && chart.resize();
  window.addEventListener('resize', onResize);
  return {
    onEvent(e) {
      if (e.type === 'job' && ids.includes(String(e.data.id)) && ['succeeded', 'failed', 'cancelled'].includes(e.data.status)) load();
      else if (e.type === 'job_deleted' && ids.includes(String(e.data.job_id))) load();  // says the job is no more
    },
    unmount() { disposed = true; window.removeEventListener('resize', onResize); if (chart) chart.dispose(); },
  };
}
