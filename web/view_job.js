// One job: its state and spec, charts of its results (metric against a parameter, a heatmap over
// two, speedup, roofline) with selectors for the other parameters, and a sortable results table
// with CSV/JSON export. Running jobs update live from the event stream. A job with variants
// (several kernels measured side by side at every point) draws a line, a colour and a table row
// per variant, and the speedups between them. A job that ended may be deleted from here; one
// deleted anywhere (another tab, the CLI, the daemon's retention) is said to be gone.

import {del, download, get, getRows, post} from './api.js';
import {METRICS, heatmapOption, isDecimated, isGeometric, kernelsOption, metricOf, rooflineOption, speedupBasis, speedupOption, sweepOption, trackPointer, variantColor,
        variantSpeedup, variantSpeedupOption, wantsLog} from './charts.js';
import {duration, emptyState, errorBox, fmtBytes, fmtTime, h, labelChips, nextTask, progressBar, setQuery, sig, statusBadge, throttle, userText, whenECharts} from './dom.js';
import {deviceLabel, nodesOf, placementText} from './fleet.js';

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);
const ROW_HEIGHT = 26;
const TABLE_ROWS = 16;  // visible rows; the rest scroll (only visible ones are in the DOM)
// A speedup's 95% interval, as the table and a point's details write it.
const speedupRange = (ci) => `${sig(ci[0], 3)}–${sig(ci[1], 3)}×`;
// The members of a result row this view reads (charts.js and the table below): under half of
// each row's bytes, so a 10,000-point job loads 4.9 MB instead of 10. Exports fetch whole rows.
// (`variant` and `comparison` are only in the rows of a job with variants.)
const ROW_FIELDS = ['index', 'held_out', 'params', 'variant', 'comparison', 'name', 'status', 'simulated', 'error', 'samples', 'flags', 'fitness.speedup', 'fitness.speedup_ci95',
  'verification.status',
  ...['median', 'ci95_low', 'ci95_high', 'p5', 'p95'].map((f) => `time_us.${f}`),
  ...['flops', 'bytes', 'tflops', 'gbps', 'arithmetic_intensity', 'roof_pct', 'bound'].map((f) => `metrics.${f}`),
  'resources.registers', 'resources.occupancy'].join(',');

// The parts of a whole result row a reader of one point wants, as headed boxes: its time and how
// it was sampled (a held batch and its correction included), its verification, its score (and a
// variant's speedups), its flags and advice, where it ran.
function pointDetail(row, close, scored) {
  const facts = (pairs) => h('dl', {class: 'facts'}, ...pairs
    .filter(([, v]) => v !== undefined && v !== null && v !== '')
    .flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, String(v))]));
  const t = row.time_us || {};
  const c = row.batch_correction;
  const v = row.verification || {};
  const env = row.environment || {};
  const res = row.resources;  // a user kernel's registers, memory and occupancy, as its platform tells
  // A job that asked for no score scores every correct point 1: nothing to show but speedups.
  const f = scored ? row.fitness : (row.comparison ? {} : null);
  const cmp = row.comparison || {};
  const speedupText = (x, ci) => (Number.isFinite(x) ? `${sig(x, 3)}×` + (Array.isArray(ci) ? ` (95% CI ${speedupRange(ci)})` : '') : undefined);
  const overVariant = (e) => (e ? `${speedupText(e.speedup, e.ci95)} over ${e.variant}` : undefined);
  const params = Object.entries(row.params || {}).map(([k, x]) => `${k}=${x}`).join(', ');
  const list = (items, empty) => (items && items.length
    ? h('ul', {}, ...items.map((x) => h('li', {}, x))) : h('p', {class: 'muted'}, empty));
  return [
    h('div', {class: 'title-row'},
      h('h3', {}, `Point ${row.index}`, row.variant !== undefined ? ` · ${row.variant}` : '', params ? ` (${params})` : ''),
      h('button', {type: 'button', class: 'ghost small', id: 'point-detail-close', onclick: close}, 'Close')),
    h('div', {class: 'detail-grid'},
      h('div', {}, h('h4', {}, 'Timing'), facts([
        ['median', t.median !== undefined ? fmtTime(t.median) : undefined],
        ['95% CI', Number.isFinite(t.ci95_low) ? `${fmtTime(t.ci95_low)} – ${fmtTime(t.ci95_high)}`
                   : row.samples > 0 && row.samples < 6 ? `none: ${row.samples} of the 6 samples it takes` : undefined],
        ['p5 – p95', Number.isFinite(t.p5) ? `${fmtTime(t.p5)} – ${fmtTime(t.p95)}` : undefined],
        ['samples', row.samples !== undefined && row.samples !== null ? `${row.samples} kept, ${row.discarded_samples || 0} discarded` : undefined],
        ['stopped', row.stop_reason ? `${row.stop_reason}${row.converged ? ' (converged)' : ''}` : undefined],
        ['caches', row.l2],
        ['launches a sample', row.batch],
        ['held batch', c ? `read as a batch of ${c.free_batch}: ${sig(c.us, 3)} µs a launch taken off (the sample's fixed cost, ${sig(c.fixed_cost_us, 3)} µs, shared by ${c.free_batch} rather than ${row.batch})` : undefined],
      ])),
      h('div', {}, h('h4', {}, 'Verification'), facts([
        ['status', v.status],
        ['trials', v.trials],
        ['max abs error', v.max_abs_err !== undefined ? sig(v.max_abs_err, 3) : undefined],
        ['max rel error', v.max_rel_err !== undefined ? sig(v.max_rel_err, 3) : undefined],
        ['norm rel error', v.norm_rel_err !== undefined ? sig(v.norm_rel_err, 3) : undefined],
        ['timed samples checked', v.timed_checks],
        ['batch probes', v.batch_probes],
        ['samples timed launch by launch', v.split_samples],
        ['launch spread', v.launch_spread !== undefined
          ? `${sig(v.launch_spread, 3)}× (${sig(v.launch_excess_us, 3)} µs` +
            (v.builtin_excess_us !== undefined ? `; built-in ${sig(v.builtin_excess_us, 3)} µs)` : ')')
          : undefined],
      ])),
      f ? h('div', {}, h('h4', {}, scored ? 'Score' : 'Speedups'), facts([
        ['correct', scored ? (f.correct ? 'yes' : 'no') : undefined],
        ['speedup', speedupText(f.speedup, f.speedup_ci95)],
        ['baseline', Number.isFinite(f.baseline_us) ? fmtTime(f.baseline_us) : undefined],
        ['latency score', Number.isFinite(f.latency_score) ? sig(f.latency_score, 3) : undefined],
        ['score', Number.isFinite(f.combined_score) ? sig(f.combined_score, 3) : undefined],
        ['vs the slowest', overVariant(cmp.over_slowest)],
        ['vs the baseline', overVariant(cmp.over_baseline)],
      ])) : '',
      res ? h('div', {id: 'point-resources'}, h('h4', {}, 'Kernel'), facts([
        ['registers', res.registers !== undefined ? `${res.registers} a thread` : undefined],
        ['shared memory', res.shared_bytes !== undefined ? `${fmtBytes(res.shared_bytes)} a block` : undefined],
        ['local memory', res.local_bytes !== undefined ? `${fmtBytes(res.local_bytes)} a thread` : undefined],
        ['threads a block', res.max_block_threads !== undefined ? `at most ${res.max_block_threads}` : undefined],
        ['work-group multiple', res.block_multiple],
        ['occupancy', Number.isFinite(res.occupancy)
          ? `${Math.round(res.occupancy * 100)}%` + (res.blocks_per_unit !== undefined ? ` (${res.blocks_per_unit} blocks a unit` +
            (res.limited_by && res.limited_by.length ? `, limited by ${res.limited_by.join(' and ').replace('shared_memory', 'shared memory')})` : ')') : '')
          : undefined],
      ])) : '',
      h('div', {}, h('h4', {}, 'Ran on'), facts([
        ['device', env.device],
        ['driver', env.driver],
        ['clock', env.clock_mhz ? `${env.clock_mhz} MHz` : undefined],
        ['temperature', env.temperature_c ? `${env.temperature_c} °C` : undefined],
        ['power', env.power_w ? `${env.power_w} W` : undefined],
      ]))),
    // The verification's note runs the panel's width: it says what a check found, often at length.
    v.note ? h('div', {class: 'note-box', id: 'point-note'}, h('strong', {}, 'Verification: '), v.note) : '',
    row.error ? errorBox(row.error) : '',
    h('h4', {}, 'Flags'), list(row.flags, 'none'),
    h('h4', {}, 'Advice'), h('div', {id: 'point-advice'}, list(row.advice, 'none')),
  ];
}

// Whether a job's rows carry a score worth reading: it asked for one, or its variants are scored
// over a baseline variant.
function scoredRows(spec) { return hasFitness(spec) || Boolean(spec && spec.baseline); }

// Whether the job asked to be scored (fitness.baseline or fitness.target_us): only then is its
// fitness summary worth showing (without, every correct point scores 1 by definition).
function hasFitness(spec) {
  const f = (spec && spec.fitness) || {};
  return Boolean(f.baseline) || Number.isFinite(f.target_us);
}

// The job's fitness in words: the score, whether every point was correct, and why not.
function fitnessText(f, simulated) {
  if (f.withheld) {
    return 'withheld: a point is faster than is plausible (excessive_speedup), so the score reads 0 ' +
           'until an operator confirms it';
  }
  const parts = [`combined ${sig(f.combined_score, 3)}${f.confirmed ? ' (confirmed by an operator)' : ''}`];
  if (Number.isFinite(f.speedup)) parts.push(`speedup ${sig(f.speedup, 3)}×`);
  if (Number.isFinite(f.latency_score)) parts.push(`latency score ${sig(f.latency_score, 3)}`);
  parts.push(f.correct ? 'every point correct'
             : simulated ? 'not correct: the mock engine verifies nothing unless mock.output says what to simulate'
             : 'not every point verified correct');
  // A task whose held-out scores are private: an agent reads the public points' score, an
  // operator the whole one with the public part beside it.
  if (f.held_out === 'private') parts.push('over the public points (the held-out scores are private)');
  if (f.public && Number.isFinite(f.public.combined_score)) {
    parts.push(`public points alone ${sig(f.public.combined_score, 3)}`);
  }
  return parts.join(', ');
}

// The scale of the x axis for parameter values: log for a geometric sweep (×2, ×4, ...) or one
// spread over orders of magnitude, else linear.
function defaultScale(values) {
  return isGeometric(values) || wantsLog(values) ? 'log' : 'linear';
}

// The names of a job's variants, in its order; null for a job without.
function variantNames(spec) {
  const v = spec && spec.variants;
  return Array.isArray(v) && v.length ? v.map((x) => x.name) : null;
}

// A row's identity: the variants of a point share its index.
function rowKey(r) {
  return r.variant === undefined ? `${r.index}` : `${r.index}/${r.variant}`;
}

// Whether a job without variants names a fitness baseline, so that its rows carry a speedup.
function hasBaselineSpec(spec) {
  return Boolean(spec && spec.fitness && spec.fitness.baseline);
}

// Each variant's points, wins and geometric-mean speedup, the best marked, from the summary of a
// job that ended.
function variantSummaryBox(v) {
  const basis = speedupBasis(v.speedup_over === 'baseline' ? v.baseline : null);
  return h('table', {class: 'data narrow', id: 'variant-summary'},
    h('thead', {}, h('tr', {}, h('th', {}, 'variant'), h('th', {class: 'num'}, 'points'), h('th', {class: 'num'}, 'fastest at'),
                     h('th', {class: 'num'}, `geomean ${basis.short}`))),
    h('tbody', {}, v.variants.map((x) => h('tr', {class: x.name === v.best ? 'best' : ''},
      h('td', {}, userText(x.name), x.name === v.baseline ? h('span', {class: 'muted'}, ' (baseline)') : '', x.name === v.best ? h('b', {}, ' ★ best') : ''),
      h('td', {class: 'num'}, String(x.ok_points)),
      h('td', {class: 'num'}, `${x.wins} of ${v.points}`),
      h('td', {class: 'num'}, Number.isFinite(x.geomean_speedup) ? `${sig(x.geomean_speedup, 3)}×` : '—')))));
}

function defaultMetric(job) {
  if (job.op === 'gemm') return 'tflops';
  if (job.op === 'stream') return 'gbps';
  return 'time';
}

// The dtype whose peak bounds the kernel (as the engine decides it, engine/metrics.hpp; an
// import says which it used).
function roofDtype(spec) {
  if (spec.import) return spec.import.dtype || 'f32';
  const k = spec.kernel || {};
  if (k.dtype) return k.dtype;
  for (const a of k.args || []) {
    const m = /^(f64|f32|f16|bf16)\*$/.exec(a.type || '');
    if (a.output && m) return m[1];
  }
  return 'f32';
}

// A variant's kernel: the job's kernel with the variant's fields laid over it, or, with another
// op, a kernel of its own.
function variantKernel(spec, v) {
  return v.op && v.op !== (spec.kernel || {}).op ? v : {...spec.kernel, ...v};
}

// The dtypes whose peaks bound a job's points: each variant's kernel's, with the colour of the
// first variant of each.
function roofDtypes(spec, variants) {
  if (!variants) return {dtypes: [roofDtype(spec)]};
  const dtypes = [], dtypeColors = {};
  for (const v of spec.variants) {
    const d = roofDtype({kernel: variantKernel(spec, v)});
    if (!dtypes.includes(d)) { dtypes.push(d); dtypeColors[d] = variantColor(variants, v.name); }
  }
  return {dtypes, dtypeColors};
}

// How the job's points could have a FLOP count on the roofline: a custom kernel's is its
// kernel.flops, which one of its kernels does not give. Null where every point's is known (a
// builtin op without floating-point work, a copy, does none).
function flopsHint(spec, variants) {
  const kernels = variants ? spec.variants.map((v) => variantKernel(spec, v)) : [spec.kernel || {}];
  return kernels.some((k) => k.op === 'custom' && !k.flops) ? 'a custom kernel gives its work as kernel.flops' : null;
}

// An imported job's device: not one of this daemon's, but the catalog model its results were
// analysed against (with its datasheet ceilings for the roofline), or just the name its source
// gave. Null when the import named none.
function importedDevice(job) {
  const d = job.spec && job.spec.import && job.spec.import.device;
  return d ? {index: null, name: d.name || d.model, datasheet: d.datasheet || null} : null;
}

const MAX_ID = 2n ** 63n - 1n;

// Past this many values, a fixed parameter is picked with a number rather than a list.
const MANY_VALUES = 50;

// The place in sorted `values` of the one nearest `v` (the smaller of two as near).
function nearestIndex(values, v) {
  let lo = 0, hi = values.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (values[mid] < v) lo = mid + 1; else hi = mid;
  }
  return lo > 0 && v - values[lo - 1] <= values[lo] - v ? lo - 1 : lo;
}

// A count with its thousands grouped ("10,000"), without the Intl object's start-up cost.
const grouped = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

// `id`: the job's id, a digit string without leading zeros.
export function mount(root, {id, query}) {
  // nodes: the fleet's (from the devices list), to name the device "node / index" in a fleet.
  // variants: the job's variant names (null without); baseline: the one speedups are over.
  const state = {job: null, rows: [], device: null, nodes: new Set(), names: [], values: {}, sel: null, variants: null, baseline: null,
                 sort: {key: 'index', dir: 1}, sorted: null, keys: null, deleted: false,
                 // A fixed value asked for (the URL's fix.N, else the best point's) that no row
                 // had when the selections were made: taken once a row has it, unless one is
                 // picked first. rowsLoaded: the job's results have come once.
                 wantedFixed: {}, rowsLoaded: false};
  const charts = new Map();  // id -> echarts instance
  let disposed = false;

  const head = h('div', {class: 'job-head'}, h('p', {class: 'muted'}, `Loading job ${id}…`));
  const message = h('div');
  const controls = h('div', {class: 'controls', id: 'chart-controls'});
  const grid = h('div', {class: 'chart-grid'});
  // In the charts' place when a job ended with every point failed: four empty charts would push
  // the table of its failed points off the screen.
  const noCharts = h('p', {class: 'muted', id: 'no-charts', hidden: true},
    'Nothing to chart: every point failed (the error is above; each point\'s is in the table).');
  const tableWrap = h('section', {class: 'results'});
  const specBox = h('details', {class: 'spec'});
  const detailBox = h('section', {class: 'point-detail', id: 'point-detail', hidden: true});
  root.append(head, message, controls, grid, noCharts, tableWrap, detailBox, specBox);

  // The boxes go in first, then the charts: ECharts sizes a chart when it is made, and the
  // grid's columns settle once every box is in (made alone, the first chart took the whole row's
  // width and drew over its neighbour).
  function chartBox(chartId, title, note) {
    const el = h('div', {class: 'chart', id: chartId});
    const box = h('section', {class: 'chart-box', dataset: {chart: chartId}},
                  h('h3', {}, title, note ? h('span', {class: 'muted'}, ` ${note}`) : ''), el);
    grid.append(box);
    return el;
  }
  function initChart(el) {
    if (!el) return undefined;
    const chart = echarts.init(el, null, {renderer: 'canvas'});
    charts.set(el.id, chart);
    return chart;
  }

  const onResize = throttle(() => charts.forEach((c) => c.resize()), 150);
  window.addEventListener('resize', onResize);

  // ---- header ----
  function renderHead() {
    if (state.deleted) return;  // an answer that left before the job was deleted
    const j = state.job;
    const active = !TERMINAL.has(j.status);
    const buttons = h('div', {class: 'actions'},
      active && !j.cancel_requested ? h('button', {type: 'button', class: 'danger', id: 'cancel-job', onclick: cancel}, 'Cancel') : '',
      j.summary && j.summary.fitness && j.summary.fitness.withheld
        ? h('button', {type: 'button', id: 'confirm-score', title: 'an operator\'s call: score the job as measured (POST /api/v1/jobs/{id}/confirm)',
                       onclick: confirmScore}, 'Confirm score') : '',
      j.engine !== 'import' && !j.task
        ? h('button', {type: 'button', class: 'ghost', id: 'rerun-job', title: 'submit this job\'s spec again, measured afresh (a new seed, not from the result cache)',
                       onclick: () => { location.hash = `#/submit?from=${id}`; }}, 'Run again') : '',
      !active ? h('button', {type: 'button', class: 'danger', id: 'delete-job', title: 'delete the job and its results (DELETE /api/v1/jobs/{id})',
                             onclick: deleteJob}, 'Delete') : '',
      h('button', {type: 'button', class: 'ghost', id: 'export-csv',
                   onclick: () => download(`/api/v1/jobs/${id}/results?format=csv`, `kernelscan-job-${id}.csv`).catch(showError)}, 'Export CSV'),
      h('button', {type: 'button', class: 'ghost', id: 'export-json',
                   onclick: () => download(`/api/v1/jobs/${id}/results?format=json`, `kernelscan-job-${id}.json`).catch(showError)}, 'Export JSON'),
      h('a', {class: 'button ghost', href: `#/compare?jobs=${id}`}, 'Compare…'));
    const imported = j.engine === 'import';
    const fleet = new Set([...state.nodes, ...nodesOf([], [j])]).size > 1;
    const where = j.device === null ? '' : deviceLabel(j.node, j.device, fleet);
    const dev = imported ? (state.device ? state.device.name : 'not named') + ' (measured elsewhere)'
              : state.device ? `${where}: ${state.device.name}`
              : j.device === null ? `${placementText(j.requested_device, fleet)} (not started)` : where;
    const best = j.summary && j.summary.best;
    // With variants the best row is found by its point and time (the summary's index counts rows,
    // while the rows of a point's variants share the point's index).
    const bestRow = best && state.rows.length ? state.rows.find((r) => (state.variants
      ? r.time_us && best.params && r.params && r.time_us.median === best.median_us && Object.entries(best.params).every(([k, v]) => r.params[k] === v)
      : r.index === best.index)) : undefined;
    const bestName = bestRow && (bestRow.name || bestRow.variant);
    const variants = j.summary && j.summary.variants;
    const fitness = j.summary && j.summary.fitness;
    const simulated = (fitness && fitness.simulated === true) || state.rows.some((r) => r.simulated === true);
    const facts = h('dl', {class: 'facts'},
      h('dt', {}, 'op'), h('dd', {}, j.op),
      j.task ? [h('dt', {}, 'task'), h('dd', {}, h('a', {id: 'job-task', href: `#/tasks/${encodeURIComponent(j.task)}`}, j.task),
        h('span', {class: 'muted'}, ' (a submission: see its leaderboard)'))] : '',
      !imported && j.node ? [h('dt', {}, 'node'), h('dd', {id: 'job-node'}, j.node)] : '',
      h('dt', {}, 'device'), h('dd', {id: 'job-device'}, dev),
      h('dt', {}, imported ? 'imported' : 'submitted'), h('dd', {title: j.created_at}, new Date(j.created_at).toLocaleString()),
      imported ? [h('dt', {}, 'from'), h('dd', {id: 'import-format'}, j.spec && j.spec.import ? j.spec.import.format : '—')]
               : [h('dt', {}, 'ran for'), h('dd', {}, j.started_at ? duration(j.started_at, j.finished_at) : '—')],
      // Answered at once by an identical job's measurement (the result cache).
      Number.isInteger(j.cached_from) ? [h('dt', {}, 'measured by'), h('dd', {id: 'job-cached-from'},
        h('a', {href: `#/jobs/${j.cached_from}`}, `job #${j.cached_from}`),
        h('span', {class: 'muted'}, ': the result cache answered this job with its points (Run again measures afresh)'))] : '',
      state.variants ? [h('dt', {}, 'variants'), h('dd', {id: 'job-variants'}, state.variants.flatMap((v, i) => [i ? ', ' : '',
        h('span', {class: 'variant-name', style: `color:${variantColor(state.variants, v)}`}, v)]),
        state.baseline ? ` (speedups over ${state.baseline})` : ' (speedups over the slowest at each point)')] : '',
      variants && variants.best ? [h('dt', {}, 'best variant'), h('dd', {id: 'best-variant'},
        userText(variants.best), `: ${sig((variants.variants.find((x) => x.name === variants.best) || {}).geomean_speedup, 3)}× ` +
        `${speedupBasis(variants.speedup_over === 'baseline' ? variants.baseline : null).short} (geometric mean over ${variants.points} points)`)] : '',
      h('dt', {title: 'the point with the highest throughput: the least time per FLOP, else per byte, else the least time'},
        state.variants ? 'best row' : 'best'), h('dd', {id: 'best-point'}, best && best.held_out
        ? `point ${best.index}, held out by its task (its sizes and time are not shown)`
        : best
        ? [`${fmtTime(best.median_us)} at ${Object.entries(best.params).map(([k, v]) => `${k}=${v}`).join(', ')}`,
           bestName ? [' (', userText(bestName), ')'] : ''] : '—'),
      simulated ? [h('dt', {}, 'times'), h('dd', {id: 'simulated-note', class: 'warn'},
        'simulated by the mock engine: a model of the device, no kernel compiled, run or verified')] : '',
      fitness && hasFitness(j.spec) ? [h('dt', {}, 'fitness'), h('dd', {id: 'job-fitness'}, fitnessText(fitness, simulated))] : '');
    const perVariant = variants && Array.isArray(variants.variants) && variants.variants.length ? variantSummaryBox(variants) : '';
    head.replaceChildren(
      h('div', {class: 'title-row'},
        h('h2', {}, `#${j.id} `, userText(j.name)), statusBadge(j.status), labelChips(j.labels), h('span', {class: 'spacer'}), buttons),
      progressBar(j.progress),
      facts,
      perVariant,
      j.error ? errorBox(j.error) : '');
    specBox.replaceChildren(h('summary', {}, 'Spec (as stored, with defaults filled in)'),
                            h('pre', {}, JSON.stringify(j.spec, null, 2)));
  }

  async function cancel() {
    try {
      state.job = await post(`/api/v1/jobs/${id}/cancel`);
      renderHead();
    } catch (e) {
      showError(e);
    }
  }

  // A withheld score scored as measured: an operator's call (403 for anyone else, said as the
  // daemon says it).
  async function confirmScore() {
    try {
      state.job = await post(`/api/v1/jobs/${id}/confirm`);
      message.replaceChildren();
      renderHead();
    } catch (e) {
      showError(e);
    }
  }

  // Deleted here: on to the jobs list. A job not ended yet (or, where the daemon has operator
  // tokens, a token that is not one) is refused, said as the daemon says it.
  async function deleteJob() {
    if (!confirm(`Delete job ${id} and its results? This cannot be undone.`)) return;
    try {
      await del(`/api/v1/jobs/${id}`);
      location.hash = '#/jobs';
    } catch (e) {
      if (e.status === 404) showDeleted(); else showError(e);
    }
  }

  // The job is gone (deleted in another tab, by the CLI, on another node, or by the daemon's
  // retention): nothing of it is left to show or to ask for again.
  function showDeleted() {
    if (state.deleted) return;
    state.deleted = true;
    disposed = true;
    charts.forEach((c) => c.dispose());
    charts.clear();
    head.replaceChildren(h('h2', {}, `Job ${id}`));
    for (const el of [controls, grid, noCharts, tableWrap, detailBox, specBox]) el.remove();
    message.replaceChildren(h('div', {id: 'job-deleted'},
      emptyState(`Job ${id} was deleted.`, h('p', {}, h('a', {href: '#/jobs'}, 'All jobs')))));
  }

  function showError(e) {
    if (state.deleted) return;
    if (e.status === 404 && state.job) showDeleted(); else message.replaceChildren(errorBox(e));
  }

  // ---- selections ----
  function updateValues() {
    for (const n of state.names) {
      const set = new Set();
      for (const r of charted()) set.add(r.params[n]);
      state.values[n] = [...set].sort((a, b) => a - b);
    }
  }

  // The values of the parameters other than `x` where the sweep has the most points along `x`
  // (ties: the best point's): fixed at the best point's alone, a sweep whose best point sits
  // alone in its slice (a task's held-out size) charts one point.
  function widestSlice(x, best) {
    const others = state.names.filter((n) => n !== x);
    if (!others.length) return {};
    const counts = new Map();
    for (const r of state.rows) {
      if (!r.params) continue;
      let key = '';
      for (const n of others) key += `${r.params[n]},`;
      counts.set(key, (counts.get(key) || 0) + 1);
    }
    let bestKey = '';
    for (const n of others) bestKey += `${best[n]},`;
    let pick = null, most = 0;
    for (const [key, c] of counts) if (c > most || (c === most && key === bestKey)) { pick = key; most = c; }
    if (pick === null) return {};
    const values = pick.split(',');
    return Object.fromEntries(others.map((n, i) => [n, Number(values[i])]));
  }

  function initSelections() {
    const names = state.names;
    const bySize = parametersBySize();
    const best = (state.job.summary && state.job.summary.best && state.job.summary.best.params) || {};
    const sel = {
      metric: query.get('metric') || defaultMetric(state.job),
      x: query.get('x') || bySize[0] || '',
      by: query.get('by') || '',
      hx: query.get('hx') || bySize[0] || '',
      hy: query.get('hy') || bySize[1] || '',
      // The heatmap of a job with variants: one variant's metric, or ('speedup') at each point its
      // fastest variant's speedup.
      hv: query.get('hv') || '',
      xscale: query.get('xscale') || '',
      fixed: {},
    };
    if (!METRICS[sel.metric]) sel.metric = 'time';
    if (state.variants) {
      sel.by = '';  // the lines are the variants
      if (sel.hv !== 'speedup' && !state.variants.includes(sel.hv)) sel.hv = state.variants[0];
    }
    for (const key of ['x', 'by', 'hx', 'hy']) if (sel[key] && !names.includes(sel[key])) sel[key] = '';
    if (!sel.x) sel.x = bySize[0] || '';
    if (sel.by === sel.x) sel.by = '';  // one line per value of the x axis would be lines of one point
    pairHeatmap(sel, sel.hx ? 'hx' : 'hy', bySize);
    if (sel.xscale !== 'log' && sel.xscale !== 'linear') sel.xscale = '';  // '': by the values (xScale)
    const widest = widestSlice(sel.x, best);
    for (const n of names) {
      const q = query.get(`fix.${n}`);
      const wanted = q !== null && Number.isFinite(Number(q)) ? Number(q) : widest[n] ?? best[n];
      const vals = state.values[n];
      sel.fixed[n] = wanted !== undefined && vals.includes(wanted) ? wanted : vals[0];
      // The selections may be made before every row has come (an event drew the page first).
      if (wanted !== undefined && !vals.includes(wanted)) state.wantedFixed[n] = wanted;
    }
    state.sel = sel;
  }

  // The heatmap's two axes are two different parameters, whatever the URL or a selector asked:
  // the one just chosen (`kept`, 'hx' or 'hy') stays, and the other becomes the one it replaced,
  // else the parameter with the most values that is left (a heatmap of M against M has no cells).
  function pairHeatmap(sel, kept, bySize, previous) {
    if (bySize.length < 2) return;
    const other = kept === 'hx' ? 'hy' : 'hx';
    if (!sel[kept]) sel[kept] = bySize.find((n) => n !== sel[other]);
    if (sel[other] && sel[other] !== sel[kept]) return;
    sel[other] = previous && previous !== sel[kept] ? previous : bySize.find((n) => n !== sel[kept]);
  }
  // The parameters, the one with the most values first (the default x axis). Counted in the
  // job's sweep, not in the points stored so far: those of a running job come the last parameter
  // fastest, and would put another parameter first than the job has once it ends.
  function parametersBySize() {
    const sweep = state.job.spec.sweep || {};
    const count = (n) => (Array.isArray(sweep[n]) ? new Set(sweep[n]).size : state.values[n].length);
    return [...state.names].sort((a, b) => count(b) - count(a));
  }

  // The x axis's scale: the one chosen, else the one the x parameter's values call for (decided
  // when drawing, so that points still arriving count).
  function xScale() {
    return state.sel.xscale || defaultScale(state.values[state.sel.x] || []);
  }

  // The metrics the job's points can show: TFLOP/s only where one did floating-point work, GB/s
  // where one moved bytes (a copy kernel has no TFLOP/s, not 0). Until a point is measured, all.
  function shownMetrics() {
    const ok = state.rows.filter((r) => r.status === 'ok');
    return Object.keys(METRICS).filter((k) => k === 'time' || !ok.length || ok.some((r) => metricOf(r, k)));
  }
  // A metric the points cannot show (a URL's TFLOP/s for a copy kernel) gives way to GB/s, else time.
  function fitMetric(sel) {
    const shown = shownMetrics();
    if (!shown.includes(sel.metric)) sel.metric = shown.includes('gbps') ? 'gbps' : 'time';
  }

  function saveSelections() {
    const s = state.sel;
    const q = [['metric', s.metric], ['x', s.x]];
    if (s.xscale) q.push(['xscale', s.xscale]);
    if (s.by) q.push(['by', s.by]);
    if (s.hx) q.push(['hx', s.hx], ['hy', s.hy]);
    if (state.variants) q.push(['hv', s.hv]);
    for (const [n, v] of Object.entries(s.fixed)) q.push([`fix.${n}`, String(v)]);
    setQuery(q);
  }

  function select(id, label, options, value, onchange) {
    const el = h('select', {id, 'aria-label': label},
                 options.map(([v, text]) => h('option', {value: String(v)}, text)));
    el.value = String(value);
    el.addEventListener('change', () => { onchange(el.value); saveSelections(); renderCharts(); });
    return h('label', {}, `${label} `, el);
  }

  // A fixed parameter of many values (a sweep of 10,000 sizes has 10,000): a list that long is
  // no use to pick from, so a number, snapped to the nearest value the job has, with steps to the
  // values either side (the buttons, or the arrow keys) and the value's place among them.
  function valuePicker(n, values, value, onchange) {
    const input = h('input', {type: 'number', id: `fix-${n}`, class: 'value-picker', step: 'any',
                              min: String(values[0]), max: String(values[values.length - 1])});
    const place = h('span', {class: 'muted', id: `fix-${n}-place`});
    const prev = h('button', {type: 'button', class: 'ghost small', id: `fix-${n}-prev`, title: `the next smaller ${n}`, onclick: () => go(i - 1)}, '‹');
    const next = h('button', {type: 'button', class: 'ghost small', id: `fix-${n}-next`, title: `the next larger ${n}`, onclick: () => go(i + 1)}, '›');
    let i = Math.max(0, values.indexOf(value));
    const show = () => {
      input.value = String(values[i]);
      place.textContent = `value ${grouped(i + 1)} of ${grouped(values.length)}`;
      prev.disabled = i === 0;
      next.disabled = i === values.length - 1;
    };
    function go(j) {
      i = Math.min(values.length - 1, Math.max(0, j));
      show();
      onchange(values[i]);
      saveSelections();
      renderCharts();
    }
    input.addEventListener('change', () => {
      const v = Number(input.value);
      if (input.value.trim() === '' || !Number.isFinite(v)) show(); else go(nearestIndex(values, v));
    });
    input.addEventListener('keydown', (e) => {
      if (e.key === 'ArrowUp' || e.key === 'ArrowDown') { e.preventDefault(); go(i + (e.key === 'ArrowUp' ? 1 : -1)); }
    });
    show();
    return h('span', {class: 'value-pick'}, h('label', {}, `${n} = `, input), prev, next, place);
  }

  function renderControls() {
    const s = state.sel, names = state.names;
    const metric = select('sel-metric', 'metric', shownMetrics().map((k) => [k, METRICS[k].short]), s.metric, (v) => { s.metric = v; });
    // An import's kernels are no sweep: no axis or lines to choose.
    if (imported()) { controls.replaceChildren(h('div', {class: 'row'}, metric)); return; }
    const parts = [
      metric,
      select('sel-x', 'x', names.map((n) => [n, n]), s.x, (v) => {
        s.x = v; if (s.by === v) s.by = ''; s.xscale = ''; renderControls();
      }),
      select('sel-xscale', 'x scale', [['linear', 'linear'], ['log', 'log']], xScale(), (v) => { s.xscale = v; }),
      state.variants ? ''
        : select('sel-by', 'lines per', [['', 'none'], ...names.filter((n) => n !== s.x).map((n) => [n, n])], s.by, (v) => { s.by = v; renderControls(); }),
    ];
    if (names.length >= 2) {
      // Picking the other axis's parameter swaps the two.
      parts.push(select('sel-hx', 'heatmap x', names.map((n) => [n, n]), s.hx, (v) => {
        const was = s.hx; s.hx = v; pairHeatmap(s, 'hx', parametersBySize(), was); renderControls();
      }),
                 select('sel-hy', 'heatmap y', names.filter((n) => n !== s.hx).map((n) => [n, n]), s.hy, (v) => { s.hy = v; renderControls(); }));
    }
    if (names.length >= 2 && state.variants) {
      parts.push(select('sel-hv', 'heatmap of', [...state.variants.map((v) => [v, v]), ['speedup', 'speedup (fastest variant)']],
                        s.hv, (v) => { s.hv = v; }));
    }
    // A selector for each parameter some chart holds fixed: the sweep chart all but its x and its
    // lines, the heatmap all but its axes, the speedup chart all but the x.
    const heat = names.length >= 2;
    const held = (n) => (n !== s.x && n !== s.by) || (heat && n !== s.hx && n !== s.hy) || (hasSpeedupChart() && n !== s.x);
    const fixes = names.filter((n) => state.values[n].length > 1 && held(n)).map((n) => (state.values[n].length > MANY_VALUES
      ? valuePicker(n, state.values[n], s.fixed[n], (v) => { s.fixed[n] = v; delete state.wantedFixed[n]; })
      : select(`fix-${n}`, `${n} =`, state.values[n].map((v) => [v, String(v)]), s.fixed[n],
               (v) => { s.fixed[n] = Number(v); delete state.wantedFixed[n]; })));
    controls.replaceChildren(h('div', {class: 'row'}, parts),
                             fixes.length ? h('div', {class: 'row'}, h('span', {class: 'muted'}, 'fix the others:'), fixes) : '');
  }

  // The rows with sizes: an evaluation task's held-out points come without them (they are in the
  // table, not in the charts).
  function charted() {
    return state.rows.filter((r) => !r.held_out);
  }

  // Rows of the slice where every parameter but `free` equals its selector.
  function slice(free) {
    const fixed = state.names.filter((n) => !free.includes(n));
    return charted().filter((r) => fixed.every((n) => r.params[n] === state.sel.fixed[n]));
  }

  // ---- charts ----
  let sweepChart, heatChart, speedChart, roofChart;
  let heatPointer, heatImage;  // the pointer over the heatmap; its series when drawn as an image
  let boxes = null;
  // The boxes go in as soon as the job is known, so that the table below them does not move when
  // the charts come (ECharts may still be compiling when the results are in).
  function hasSpeedupChart() {
    return Boolean(state.variants) || hasBaselineSpec(state.job.spec);
  }
  // Results measured elsewhere: one point per kernel, numbered, not a sweep of sizes.
  function imported() {
    return state.job.engine === 'import';
  }
  function ensureBoxes() {
    boxes = boxes || [
      imported() ? chartBox('chart-sweep', 'Per kernel', '(95% CI bars)') : chartBox('chart-sweep', 'Against a parameter', '(95% CI bars)'),
      state.names.length >= 2 ? chartBox('chart-heatmap', 'Heatmap') : null,
      !hasSpeedupChart() ? null
        : state.variants ? chartBox('chart-speedup', 'Speedup between variants', `(${speedupBasis(state.baseline).short}, 95% CI bars)`)
        : chartBox('chart-speedup', 'Speedup over the baseline', '(95% CI bars)'),
      chartBox('chart-roofline', 'Roofline'),
    ];
  }
  // A zoom the user set (the wheel, the toolbox's box) is kept, per chart and axis, as a window
  // of the axis's values (of its categories on a heatmap's): a running job's redraw, and a
  // selector that leaves the axis as it was (the metric, lines per, a fixed parameter's value),
  // draw the chart again over the same window. The window goes when the axis changes (another x
  // parameter or scale; for the y axis any other selection, whose values are others) or with the
  // toolbox's reset. `drawn` holds, per chart, how it was last drawn: `keys` name its axes as
  // drawn, `make(xWindow)` makes its option, `windows` are the zoom's ({key, range} per axis).
  const drawn = new Map();
  // The window of a chart's axis (`dim`, 'x' or 'y') that a zoom shows, or null when not zoomed.
  function zoomWindow(chart, dim) {
    const model = chart.getModel();
    const zoomed = model.queryComponents({mainType: 'dataZoom'}).some((z) => {
      const axes = z.option[`${dim}AxisIndex`];
      const [a, b] = z.getPercentRange();
      return (Array.isArray(axes) ? axes.includes(0) : axes === 0) && (a > 0 || b < 100);
    });
    const axisModel = zoomed && model.getComponent(`${dim}Axis`, 0);
    if (!axisModel) return null;
    const [lo, hi] = axisModel.axis.scale.getExtent();
    if (axisModel.axis.type !== 'category') return [lo, hi];
    const names = axisModel.option.data || [];
    return [names[Math.round(lo)], names[Math.round(hi)]].map(String);
  }
  // `option` zoomed to `range` on its axis `dim`: its own dataZoom of that axis set to the window,
  // else one added that only holds it (as the toolbox's box zoom does).
  function zoomTo(option, dim, range) {
    const axis = option[`${dim}Axis`];
    let [start, end] = range;
    if (axis.type === 'category') {
      const names = (axis.data || []).map(String);
      [start, end] = [names.indexOf(range[0]), names.indexOf(range[1])];
      if (start < 0 || end < 0) return;  // a category gone: the whole axis
    }
    const list = [...(option.dataZoom || [])];
    const own = list.findIndex((z) => z[`${dim}AxisIndex`] === 0);
    if (own >= 0) {
      list[own] = {...list[own], startValue: start, endValue: end};
    } else {
      const filterMode = (((option.toolbox || {}).feature || {}).dataZoom || {}).filterMode || 'filter';
      list.push({type: 'select', [`${dim}AxisIndex`]: 0, startValue: start, endValue: end, filterMode});
    }
    option.dataZoom = list;
  }
  // Draws `chart` anew, over the windows of a zoom kept for axes that are still the same.
  function draw(chart, keys, make) {
    const windows = (drawn.get(chart) || {}).windows || {};
    for (const dim of ['x', 'y']) if (windows[dim] && windows[dim].key !== keys[dim]) delete windows[dim];
    const made = make(windows.x ? windows.x.range : null);
    const option = {...made};  // made may be drawn again (the reset), without this zoom
    for (const dim of ['x', 'y']) if (windows[dim]) zoomTo(option, dim, windows[dim].range);
    drawn.set(chart, {keys, make, windows, decimated: isDecimated(made)});
    chart.setOption(option, {notMerge: true, lazyUpdate: false});
  }
  // A zoom noted as it is made; a decimated line (charts.js) zoomed into is decimated again over
  // the window, so that a zoom shows the points there rather than those kept for the whole axis.
  function followZoom(chart) {
    let timer = null;
    chart.on('datazoom', () => {
      const d = drawn.get(chart);
      if (!d || disposed) return;
      // Noted at once: a redraw may come before the line is decimated again.
      for (const dim of ['x', 'y']) {
        const range = zoomWindow(chart, dim);
        if (range) d.windows[dim] = {key: d.keys[dim], range}; else delete d.windows[dim];
      }
      clearTimeout(timer);
      timer = setTimeout(() => {
        const now = drawn.get(chart);
        if (!now || !now.decimated || disposed) return;
        const range = chart.getModel().getComponent('xAxis', 0).axis.scale.getExtent();
        chart.setOption({series: now.make(range).series}, {replaceMerge: ['series']});
      }, 100);
    });
    // The toolbox's reset: the chart over its whole axes, as the selectors draw it.
    chart.on('restore', () => {
      const d = drawn.get(chart);
      if (!d || disposed) return;
      d.windows = {};
      draw(chart, d.keys, d.make);
    });
  }
  function ensureCharts() {
    if (sweepChart) return;
    ensureBoxes();
    [sweepChart, heatChart, speedChart, roofChart] = boxes.map(initChart);
    for (const chart of [sweepChart, heatChart, speedChart, roofChart]) if (chart) followZoom(chart);
    if (heatChart) {
      heatPointer = trackPointer(heatChart.getDom());
      // An image heatmap (charts.js) is redrawn for the range the visualMap's handles select.
      heatChart.on('datarangeselected', (e) => {
        if (!heatImage) return;
        heatImage.setRange(e.selected);
        heatChart.setOption({series: [{id: heatImage.id, data: [[0, 0]]}]});
      });
    }
  }

  // A static placeholder (showLoading's spinner would repaint every frame while data loads), drawn
  // only when ECharts is ready before the results: set on four charts, it costs as much as a chart.
  function placeholders() {
    ensureCharts();
    charts.forEach((c) => c.setOption({title: {text: 'loading results…', left: 'center', top: 'middle',
                                                textStyle: {color: '#9ca3af', fontSize: 13, fontWeight: 'normal'}}}));
  }

  // The heatmap's cells: every row (a job without variants), one variant's, or at each point the
  // speedup of its fastest variant (named in the tooltip) over the baseline or the slowest.
  function heatRows(rows) {
    const v = state.sel.hv;
    if (!state.variants) return {rows};
    if (v !== 'speedup') return {rows: rows.filter((r) => r.variant === v)};
    const basis = speedupBasis(state.baseline);
    const best = new Map();
    for (const r of rows) {
      const sp = variantSpeedup(r, basis);
      const b = best.get(r.index);
      if (sp && (!b || sp.v > b.sp)) best.set(r.index, {r, sp: sp.v});
    }
    return {rows: [...best.values()].map((b) => b.r),
            value: {label: `fastest variant's ${basis.title}`, unit: '×', short: 'speedup', lowerBetter: false,
                    of: (r) => { const sp = variantSpeedup(r, basis); return sp && sp.v; }}};
  }

  // The charts are drawn one a task (a 100,000-point job's four took 0.3–0.5 s in one), so that
  // input and the live stream are answered between them. A render drops the draws of an earlier
  // one still waiting: each render takes the next `drawRound`, and `stepwise` runs a round's
  // steps while it is the latest, resolving with the main thread's time they took (ms), or null
  // where a later render took their place.
  let drawRound = 0;
  function stepwise(round, steps) {
    return new Promise((resolve) => {
      let busy = 0, i = 0;
      const run = () => {
        if (disposed || round !== drawRound) { resolve(null); return; }
        const t = performance.now();
        steps[i++]();
        busy += performance.now() - t;
        if (i < steps.length) nextTask(run); else resolve(busy);
      };
      run();
    });
  }

  let firstRender = true;
  function renderCharts() {
    if (disposed || !window.echarts) return Promise.resolve(null);  // drawn when ECharts comes (load)
    ensureCharts();
    // Nothing to chart: no point stored yet, or every one failed (a compile error fails them all).
    if (!state.rows.some((r) => r.status === 'ok')) {
      ++drawRound;  // and no draw still waiting draws over it
      const ended = TERMINAL.has(state.job.status);
      const text = !state.rows.length ? 'no points measured yet'
                 : ended ? 'no point was measured: every one failed (the error is above)' : 'no point measured yet: the first ones failed';
      charts.forEach((c) => { c.setOption({title: {text, left: 'center', top: 'middle', textStyle: {color: '#9ca3af', fontSize: 13, fontWeight: 'normal'}}}, {notMerge: true}); });
      if (ended && state.rows.length) {
        controls.hidden = grid.hidden = true;
        noCharts.hidden = false;
        root.dataset.chartsReady = '1';
      }
      return Promise.resolve(0);
    }
    const s = state.sel;
    const animate = state.rows.length <= 1000 && !firstRender;
    const steps = [], finished = [];
    // A chart's option is made in its own step (`make`, called by draw, again for a zoom).
    const set = (chart, keys, make) => steps.push(() => {
      finished.push(new Promise((resolve) => chart.on('finished', function done() { chart.off('finished', done); resolve(); })));
      draw(chart, keys, make);
    });
    const once = (make) => { let option; return () => option || (option = make()); };
    // The x axis of the sweep and speedup charts is the x parameter on its scale; their y axes
    // are the same only for the same selections.
    const xKey = `${s.x} ${xScale()}`;
    const yKey = JSON.stringify([s.metric, s.x, s.xscale, s.by, s.hv, s.fixed]);
    const variants = state.variants;
    const sweepRows = once(() => slice([s.x, s.by].filter(Boolean)));
    set(sweepChart, {x: imported() ? 'kernels' : xKey, y: yKey}, imported()
      ? () => kernelsOption({rows: sweepRows(), x: s.x, metric: s.metric, animate})
      : (zoom) => sweepOption({rows: sweepRows(), x: s.x, by: s.by, variants, metric: s.metric, logX: xScale() === 'log', animate, zoom}));
    if (heatChart && s.hx && s.hy && s.hx !== s.hy) {
      set(heatChart, {x: s.hx, y: s.hy}, once(() => {
        const option = heatmapOption({...heatRows(slice([s.hx, s.hy]).filter((r) => r.status === 'ok')), x: s.hx, y: s.hy, metric: s.metric,
                                      animate, pointer: heatPointer});
        heatImage = option.series[0].setRange ? option.series[0] : null;
        return option;
      }));
    }
    if (speedChart) {
      const speedRows = once(() => slice([s.x]));
      set(speedChart, {x: variants ? xKey : `${s.x} categories`, y: yKey}, variants
        ? (zoom) => variantSpeedupOption({rows: speedRows(), x: s.x, variants, baseline: state.baseline, logX: xScale() === 'log', animate, zoom})
        : () => speedupOption({rows: speedRows(), x: s.x, animate}));
    }
    // The roofline's axes are every point's, whatever the selectors say.
    set(roofChart, {x: 'roofline', y: 'roofline'},
        once(() => rooflineOption({rows: charted(), device: state.device, ...roofDtypes(state.job.spec, variants), variants,
                                   flopsHint: flopsHint(state.job.spec, variants), animate})));
    const round = ++drawRound;
    return stepwise(round, steps).then((busy) => {
      if (busy === null) return null;
      const first = firstRender;
      firstRender = false;
      Promise.all(finished).then(() => {
        // Every chart of this render drawn, for the tests (tests/browser), and navigation to
        // the first render's, for the dashboard benchmark.
        root.dataset.drawnRound = String(round);
        if (!first) return;
        window.kernelscanRendered = {job: id, ms: performance.now(), points: state.rows.length};
        root.dataset.chartsReady = '1';
      });
      return busy;
    });
  }

  // ---- results table ----
  // Imported rows name their kernel, and leave out the statistics their source did not give.
  const COLUMNS = () => [
    {key: 'index', label: '#', get: (r) => r.index, num: true},
    // A task's held-out point comes without its sizes: its cells say so.
    ...state.names.map((n) => ({key: `p.${n}`, label: n, get: (r) => (r.params || {})[n], num: true,
                                text: (r) => (r.held_out ? 'held out' : (r.params || {})[n])})),
    ...(state.variants ? [{key: 'variant', label: 'variant', get: (r) => r.variant, cls: 'variant',
                           // Sorted in the job's order of variants, not by name.
                           order: (r) => state.variants.indexOf(r.variant)}] : []),
    ...(state.rows.some((r) => r.name) ? [{key: 'name', label: 'kernel name', get: (r) => r.name, cls: 'name'}] : []),
    {key: 'status', label: 'status', get: (r) => r.status},
    {key: 'median', label: 'median', get: (r) => r.time_us && r.time_us.median, fmt: fmtTime, num: true},
    {key: 'ci', label: '95% CI ±', get: (r) => r.time_us && Number.isFinite(r.time_us.ci95_low) ? (r.time_us.ci95_high - r.time_us.ci95_low) / 2 : undefined, fmt: fmtTime, num: true},
    {key: 'p5', label: 'p5', get: (r) => r.time_us && r.time_us.p5, fmt: fmtTime, num: true},
    {key: 'p95', label: 'p95', get: (r) => r.time_us && r.time_us.p95, fmt: fmtTime, num: true},
    {key: 'samples', label: 'samples', get: (r) => r.samples, num: true},
    // A kernel without floating-point work (a copy) has no TFLOP/s, rather than 0; one without
    // bytes, no GB/s.
    {key: 'tflops', label: 'TFLOP/s', get: (r) => (r.metrics && r.metrics.flops > 0 ? r.metrics.tflops : undefined), fmt: (v) => sig(v), num: true},
    {key: 'gbps', label: 'GB/s', get: (r) => (r.metrics && r.metrics.bytes > 0 ? r.metrics.gbps : undefined), fmt: (v) => sig(v), num: true},
    {key: 'ai', label: 'FLOP/B', get: (r) => r.metrics && r.metrics.arithmetic_intensity, fmt: (v) => sig(v, 3), num: true},
    {key: 'roof', label: '% roof', get: (r) => r.metrics && r.metrics.roof_pct, fmt: (v) => sig(v, 3), num: true},
    {key: 'bound', label: 'bound', get: (r) => r.metrics && r.metrics.bound},
    // A user kernel's registers and occupancy, where its platform tells them (the GPU engine).
    ...(state.rows.some((r) => r.resources && r.resources.registers !== undefined)
      ? [{key: 'regs', label: 'regs', get: (r) => r.resources && r.resources.registers, num: true}] : []),
    ...(state.rows.some((r) => r.resources && Number.isFinite(r.resources.occupancy))
      ? [{key: 'occupancy', label: 'occupancy', get: (r) => r.resources && r.resources.occupancy, fmt: (v) => `${Math.round(v * 100)}%`, num: true}] : []),
    {key: 'verify', label: 'verified', get: (r) => r.verification && r.verification.status},
    ...(state.variants ? speedupColumns(speedupBasis(state.baseline)) : []),
    {key: 'flags', label: 'flags', get: (r) => (r.flags || []).join(' ')},
  ];
  // A job with variants: each row's speedup over the baseline variant (or the slowest) and its
  // interval (sorted by its lower end).
  const speedupColumns = (basis) => [
    {key: 'speedup', label: `speedup ${basis.short}`, num: true, fmt: (v) => `${sig(v, 3)}×`,
     get: (r) => { const sp = variantSpeedup(r, basis); return sp ? sp.v : undefined; }},
    {key: 'speedup_ci', label: 'speedup 95% CI', num: true,
     get: (r) => { const sp = variantSpeedup(r, basis); return sp && sp.ci ? sp.ci[0] : undefined; },
     text: (r) => { const sp = variantSpeedup(r, basis); return sp && sp.ci ? speedupRange(sp.ci) : undefined; }},
  ];

  let tableBody, tableScroll, tableHead, columns;
  function buildTable() {
    columns = COLUMNS();
    tableHead = h('tr', {}, columns.map((c) => h('th', {
      class: (c.num ? 'num ' : '') + 'sortable', dataset: {key: c.key},
      onclick: () => { state.sort = {key: c.key, dir: state.sort.key === c.key ? -state.sort.dir : 1}; state.sorted = null; renderTable(); },
    }, c.label)));
    tableBody = h('tbody');
    tableScroll = h('div', {class: 'table-scroll', style: `max-height:${ROW_HEIGHT * (TABLE_ROWS + 1)}px`},
                    h('table', {class: 'data', id: 'results-table'}, h('thead', {}, tableHead), tableBody));
    tableScroll.addEventListener('scroll', throttle(renderTableRows, 30));
    tableWrap.replaceChildren(h('div', {class: 'title-row'}, h('h3', {}, 'Results ', h('span', {class: 'muted', id: 'results-count'}, ''))), tableScroll);
  }

  function sortedRows() {
    if (state.sorted) return state.sorted;
    if (state.sort.key === 'index' && state.sort.dir > 0) return (state.sorted = state.rows);  // as stored
    const c = columns.find((x) => x.key === state.sort.key) || columns[0];
    const dir = state.sort.dir;
    const keyed = state.rows.map((r, i) => [c.order ? c.order(r) : c.get(r), r, i]);
    keyed.sort((a, b) => {
      const x = a[0], y = b[0];
      if (x === y) return a[2] - b[2];  // as stored: by point, then the job's order of variants
      if (x === undefined || x === null) return 1;
      if (y === undefined || y === null) return -1;
      return (x < y ? -1 : 1) * dir;
    });
    state.sorted = keyed.map((k) => k[1]);
    return state.sorted;
  }

  function renderTable() {
    if (!state.rows.length) {
      tableWrap.replaceChildren(h('p', {class: 'muted', id: 'no-results'},
        TERMINAL.has(state.job.status) ? 'This job has no results.' : 'No points measured yet; they appear here as they are stored.'));
      tableBody = null;
      return;
    }
    if (!tableBody) buildTable();
    tableHead.querySelectorAll('th').forEach((th) => {
      th.classList.toggle('sorted-asc', th.dataset.key === state.sort.key && state.sort.dir > 0);
      th.classList.toggle('sorted-desc', th.dataset.key === state.sort.key && state.sort.dir < 0);
    });
    const failed = state.rows.filter((r) => r.status !== 'ok').length;
    const n = state.rows.length, points = state.variants ? new Set(state.rows.map((r) => r.index)).size : n;
    tableWrap.querySelector('#results-count').textContent =
      `${points} point${points === 1 ? '' : 's'}` + (state.variants ? ` × ${state.variants.length} variants, ${n} rows` : '') +
      (failed ? `, ${failed} failed` : '');
    renderTableRows();
  }

  // Only the rows in view (plus a margin) are in the DOM; spacer rows keep the scroll height.
  function renderTableRows() {
    if (!tableBody) return;
    const rows = sortedRows();
    // A table just built has not scrolled: reading scrollTop would lay the page out for nothing.
    const top = tableBody.childElementCount ? tableScroll.scrollTop : 0;
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - 10);
    const last = Math.min(rows.length, first + TABLE_ROWS + 30);
    const spacer = (n) => h('tr', {class: 'spacer', style: `height:${n * ROW_HEIGHT}px`});
    const out = [];
    if (first > 0) out.push(spacer(first));
    // Sorted by point, the rows of a point's variants form a group, ruled off from the next.
    const grouped = state.variants && state.sort.key === 'index';
    for (let i = first; i < last; ++i) {
      const r = rows[i];
      const cls = [r.status === 'ok' ? '' : 'failed-row', grouped && i > 0 && rows[i - 1].index !== r.index ? 'point-start' : ''];
      const title = r.error ? `${r.error.type}: ${r.error.message}`
        : r.held_out ? 'held out by its task: its sizes and times are not shown' : undefined;
      out.push(h('tr', {class: cls.filter(Boolean).join(' '), title,
                        dataset: r.variant === undefined ? {} : {variant: r.variant},
                        onclick: r.held_out ? undefined : () => showDetail(r).catch(showError)},
                 columns.map((c) => {
                   const v = c.text ? c.text(r) : c.get(r);
                   if (c.key === 'status') return h('td', {}, statusBadge(v, r.error ? r.error.message : undefined));
                   if (c.key === 'variant') {
                     return h('td', {class: 'variant'}, h('span', {class: 'swatch', style: `background:${variantColor(state.variants, v)}`}), v);
                   }
                   return h('td', {class: c.num ? 'num' : c.cls || '', title: c.cls === 'name' ? v : undefined},
                            v === undefined || v === null ? '—' : c.fmt && !c.text ? c.fmt(v) : String(v));
                 })));
    }
    if (last < rows.length) out.push(spacer(rows.length - last));
    tableBody.replaceChildren(...out);
  }

  // ---- one row whole (a click on it in the table): how it was timed and verified, its flags
  // and advice, where it ran ----
  async function showDetail(r) {
    // Rows are kept in the order stored, so a row's place is its offset in the results.
    const offset = state.rows.indexOf(r);
    detailBox.hidden = false;
    detailBox.replaceChildren(h('p', {class: 'muted'}, 'Loading the point…'));
    const [row] = await getRows(`/api/v1/jobs/${id}/results?format=jsonl&offset=${offset}&limit=1`);
    if (!row || row.index !== r.index || row.variant !== r.variant) {
      detailBox.replaceChildren(h('p', {class: 'muted'}, 'This point is no longer where the table had it: reload the page.'));
      return;
    }
    detailBox.replaceChildren(...pointDetail(row, () => { detailBox.hidden = true; }, scoredRows(state.job && state.job.spec)));
    detailBox.scrollIntoView({block: 'nearest'});
  }

  // ---- data ----
  function renderData() {
    if (disposed) return;
    updateValues();
    if (!state.sel) {
      // An event (the job's end, say) may ask for a drawing before the rows have come: the
      // selections are made from the rows, so they wait for them.
      if (!state.rows.length && !state.rowsLoaded) return undefined;
      initSelections();
    }
    fitMetric(state.sel);  // as points come: until one is measured, every metric is offered
    for (const n of state.names) {
      const wanted = state.wantedFixed[n];
      if (wanted !== undefined && state.values[n].includes(wanted)) {
        state.sel.fixed[n] = wanted;
        delete state.wantedFixed[n];
      } else if (!state.values[n].includes(state.sel.fixed[n])) {
        state.sel.fixed[n] = state.values[n][0];
      }
    }
    state.sorted = null;
    // A number being typed into a picker (valuePicker) is left alone until it is done.
    const typing = controls.contains(document.activeElement) && document.activeElement.tagName === 'INPUT';
    if (state.rows.length && !typing) renderControls();
    const drawn = renderCharts();
    renderTable();
    return drawn;
  }
  // A running job's rows are drawn again as they come: at most every 500 ms, and for a job whose
  // drawing is slow (a redraw of 100,000 points takes most of a second on a slow machine) at most
  // a fifth of the time, so that the page still answers between redraws; a burst of pages is
  // drawn once, after it.
  // The time a redraw takes is the main thread's: its own task and its charts' (drawn one a
  // task); rows that come while its charts are drawn are drawn after them.
  let renderTimer = null, nextRender = 0, rendering = false, renderAgain = false;
  function renderDataSoon() {
    if (rendering) { renderAgain = true; return; }
    if (renderTimer) return;
    renderTimer = setTimeout(async () => {
      renderTimer = null;
      rendering = true;
      const t = performance.now();
      const drawn = renderData();
      const own = performance.now() - t;
      const charts = (await drawn) || 0;
      rendering = false;
      nextRender = performance.now() + Math.max(500, 4 * (own + charts));
      if (renderAgain) { renderAgain = false; renderDataSoon(); }
    }, Math.max(0, nextRender - performance.now()));
  }

  // A running job's summary (its best point so far) changes with its points, which come without
  // it: read the job again, at most once a second. An answer that left before the job ended is
  // not newer than the job event that said so.
  const refreshJob = throttle(async () => {
    try {
      const job = await get(`/api/v1/jobs/${id}`);
      if (disposed || (TERMINAL.has(state.job.status) && !TERMINAL.has(job.status))) return;
      state.job = {...job, spec: state.job.spec};
      renderHead();
    } catch (e) {
      if (e.status === 404) showDeleted();  // else the next points event tries again
    }
  }, 1000);

  let fetching = false, again = false;
  async function fetchMore() {
    if (fetching) { again = true; return; }
    fetching = true;
    try {
      do {
        again = false;
        const page = await getRows(`/api/v1/jobs/${id}/results?format=jsonl&fields=${ROW_FIELDS}&offset=${state.rows.length}`);
        if (disposed) return;
        // The keys of the rows held, made once and kept with them: a set made anew from every
        // row for each page cost a running job of 100,000 points seconds.
        const known = state.keys || (state.keys = new Set(state.rows.map(rowKey)));
        const fresh = page.filter((r) => !known.has(rowKey(r)));
        if (fresh.length) {
          for (const r of fresh) known.add(rowKey(r));
          // Points are stored in order, so a page follows the rows held: it is appended. One
          // stored out of order (a point measured again after its worker's restart) is sorted
          // into its place.
          let last = state.rows.length ? state.rows[state.rows.length - 1].index : -Infinity;
          const inOrder = fresh.every((r) => { const ok = r.index >= last; last = r.index; return ok; });
          if (inOrder) for (const r of fresh) state.rows.push(r);
          else state.rows = state.rows.concat(fresh).sort((a, b) => a.index - b.index);
          renderDataSoon();
        }
      } while (again);
    } catch (e) {
      showError(e);
    } finally {
      fetching = false;
    }
  }

  async function load() {
    try {
      // The daemon's ids are 64-bit signed: a larger one names no job.
      if (BigInt(id) > MAX_ID) throw {status: 404};
      // All three at once; while the results travel, the charts are set up (ECharts' first
      // chart costs ~100 ms of set-up that would otherwise come after the data).
      const rowsPromise = getRows(`/api/v1/jobs/${id}/results?format=jsonl&fields=${ROW_FIELDS}`);
      const devicesPromise = get('/api/v1/devices').catch(() => null);
      rowsPromise.catch(() => {});
      const job = await get(`/api/v1/jobs/${id}`);
      if (disposed) return;
      state.job = job;
      if (job.engine === 'import') state.device = importedDevice(job);
      state.names = Object.keys(job.spec.sweep || {});
      state.variants = variantNames(job.spec);
      state.baseline = state.variants && job.spec.baseline ? job.spec.baseline : null;
      renderHead();
      ensureBoxes();
      // Whichever comes first, ECharts or the results, waits for the other; the table and the
      // selectors go in as soon as the results do, while ECharts may still be compiling.
      whenECharts().then(() => {
        if (disposed) return;
        if (state.rowsLoaded) renderCharts(); else placeholders();
      }, showError);
      const [results, devices] = await Promise.all([rowsPromise, devicesPromise]);
      if (disposed) return;
      state.rows = results;
      state.keys = null;
      state.rowsLoaded = true;
      if (devices) state.nodes = nodesOf(devices.devices);
      state.device = job.engine === 'import' ? importedDevice(job)
                   : devices && job.device !== null
                     ? devices.devices.find((d) => d.index === job.device && (!job.node || d.node === job.node)) || null : null;
      renderHead();
      renderData();
    } catch (e) {
      if (state.deleted) return;
      if (e.status === 404 && state.job) { showDeleted(); return; }  // deleted while it loaded
      head.replaceChildren(h('h2', {}, `Job ${id}`));
      if (e.status === 404) {
        // Nothing to chart or list: no empty boxes, no spec to expand.
        for (const el of [controls, grid, noCharts, tableWrap, specBox]) el.remove();
        message.replaceChildren(errorBox({type: 'not_found', message: `There is no job ${id}.`}),
                                h('p', {}, h('a', {href: '#/jobs'}, 'All jobs')));
      } else {
        showError(e);
      }
    }
  }
  load();

  return {
    async onEvent(e) {
      if (e.type === 'job_deleted' && String(e.data.job_id) === id) { showDeleted(); return; }
      if (!state.job || state.deleted) return;
      if (e.type === 'job' && String(e.data.id) === id) {
        const startedNow = state.job.device === null && e.data.device !== null;
        state.job = {...e.data, spec: state.job.spec};
        if (startedNow) {
          const node = e.data.node ? `?node=${encodeURIComponent(e.data.node)}` : '';
          state.device = await get(`/api/v1/devices/${e.data.device}${node}`).catch(() => null);
        }
        renderHead();
        if (TERMINAL.has(e.data.status)) { fetchMore(); renderDataSoon(); }
      } else if (e.type === 'points' && String(e.data.job_id) === id) {
        state.job.progress = {...state.job.progress, done: e.data.done, total: e.data.total,
                              failed: (state.job.progress.failed || 0) + e.data.failed};
        head.querySelector('.progress') && head.querySelector('.progress').replaceWith(progressBar(state.job.progress));
        fetchMore();
        refreshJob();
      } else if (e.type === 'reset') {
        fetchMore();
      }
    },
    unmount() {
      disposed = true;
      window.removeEventListener('resize', onResize);
      charts.forEach((c) => c.dispose());
    },
  };
}
