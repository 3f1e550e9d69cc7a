// ECharts options for the job, compare and device views: pure functions from API data to an
// option object, so what a chart shows follows from the results alone. ECharts is the global
// `echarts` (assets/echarts.min.js, from npm, embedded in the daemon). ECharts draws its text
// on a canvas, which obeys bidi controls: user text (job and kernel names) goes in through
// visibleText, as the page's does.

import {visibleText} from './dom.js';

export const METRICS = {
  time: {label: 'median time (µs)', unit: 'µs', short: 'time'},
  tflops: {label: 'TFLOP/s', unit: 'TFLOP/s', short: 'TFLOP/s'},
  gbps: {label: 'GB/s', unit: 'GB/s', short: 'GB/s'},
};

const PALETTE = ['#2563eb', '#dc2626', '#059669', '#d97706', '#7c3aed', '#0891b2', '#db2777',
                 '#65a30d', '#475569', '#ea580c'];
const LARGE = 2000;  // points above which series render in ECharts' large (fast) mode

// value and 95% interval of a metric for a result row (ok rows only), derived from its time.
// An imported row may have no interval (its source gave a summary): lo and hi are then
// undefined and no bar is drawn.
export function metricOf(row, metric) {
  const t = row.time_us;
  if (!t || !(t.median > 0)) return null;
  if (metric === 'time') return {v: t.median, lo: t.ci95_low, hi: t.ci95_high};
  const m = row.metrics || {};
  const work = metric === 'tflops' ? (m.flops || 0) / 1e6 : (m.bytes || 0) / 1e3;
  if (!(work > 0)) return null;
  return {v: work / t.median, lo: work / t.ci95_high, hi: work / t.ci95_low};
}

// Room at the top of a chart: the toolbox (top right), then a legend when there is one, then the
// y axis's name above the plot. Each gets a band of its own so none is drawn over another.
const TOP_PLAIN = 40, TOP_LEGEND = 80;

function baseOption(animate) {
  return {
    animation: animate,
    color: PALETTE,
    // Fixed margins, as ECharts 5 drew them: ECharts 6's default outerBoundsMode ('auto') lays
    // every chart's axes out twice to fit their labels into the container, which these margins do.
    grid: {left: 70, right: 30, top: TOP_PLAIN, bottom: 55, containLabel: false, outerBoundsMode: 'none'},
    tooltip: {trigger: 'item', confine: true},
    // Back undoes the box zooms made since the chart was last drawn; reset shows the whole axes
    // (the job view keeps a zoom across redraws until then).
    toolbox: {right: 10, top: 0, feature: {saveAsImage: {title: 'PNG'}, dataZoom: {title: {zoom: 'zoom', back: 'back'}},
                                           restore: {title: 'reset'}}},
  };
}

// A legend in its own band: left of the toolbox, above the y axis's name, scrolling when long.
function legendBand(names) {
  return {top: 34, left: 10, right: 10, type: 'scroll', data: names};
}

// Axis labels: a number as people read it (4 significant digits at most, thousands grouped or
// compact), never a double's 17 (a log axis ends where its data does: 2466.7924528301887).
export function axisNumber(v) {
  if (!Number.isFinite(v)) return '';
  const a = Math.abs(v);
  if (a >= 10000) return compact(v);
  if (a === 0) return '0';
  // A CPU's roofline reaches 1e-6 TFLOP/s: "0.000001" is cut off at the axis's edge and miscounted.
  if (a < 1e-4) return Number(v.toPrecision(3)).toExponential();
  const digits = a >= 1 ? Math.max(0, 3 - Math.floor(Math.log10(a))) : Math.min(12, 3 - Math.floor(Math.log10(a)));
  return String(Number(v.toFixed(digits)));
}

// The top of a speedup axis: above the tallest bar and the 1× line, so that neither touches the
// toolbox or the axis's name.
function headroom(extent) {
  const top = Math.max(extent.max, 1) * 1.15, step = 10 ** Math.floor(Math.log10(top)) / 2;
  return Math.ceil(top / step) * step;  // a round number: 4, not 3.737
}

// Whether sorted `values` step by a constant factor of at least 1.5 (a sweep with "mul": 2):
// evenly spaced on a log axis, bunched at one end of a linear one.
export function isGeometric(values) {
  const v = [...values].filter((x) => x > 0).sort((a, b) => a - b);
  if (v.length < 3 || v.length !== values.length) return false;
  const r = v[1] / v[0];
  return r >= 1.5 && v.every((x, i) => i === 0 || Math.abs(x / v[i - 1] / r - 1) < 0.01);
}

// Whether values spread over orders of magnitude (then a log axis reads better).
export function wantsLog(values) {
  const pos = values.filter((v) => v > 0);
  if (pos.length < 3 || pos.length !== values.length) return false;
  return Math.max(...pos) / Math.min(...pos) >= 16;
}

function errorBars(name, data, color) {
  // data: [x, lo, hi]; drawn as an I-beam per point.
  return {
    name, type: 'custom', data, z: 1, silent: true, legendHoverLink: false,
    itemStyle: {color, opacity: 0.7},
    encode: {x: 0, y: [1, 2]},
    renderItem(params, api) {
      const x = api.value(0), lo = api.coord([x, api.value(1)]), hi = api.coord([x, api.value(2)]);
      const w = 4;
      const style = {stroke: api.visual('color'), lineWidth: 1.2};
      return {type: 'group', children: [
        {type: 'line', shape: {x1: lo[0], y1: lo[1], x2: hi[0], y2: hi[1]}, style},
        {type: 'line', shape: {x1: lo[0] - w, y1: lo[1], x2: lo[0] + w, y2: lo[1]}, style},
        {type: 'line', shape: {x1: hi[0] - w, y1: hi[1], x2: hi[0] + w, y2: hi[1]}, style},
      ]};
    },
  };
}

// A line of more points than its plot has pixels across is drawn decimated: its x axis is cut
// into DECIMATE_SLICES slices (of equal width on the axis's scale) and each slice keeps its
// lowest and highest point (so no peak or dip is lost, and each kept point is a real one, with
// its tooltip), and a failed point as a gap; its CI bars, which at that density drew over each
// other as a smear (and cost ECharts three elements a point: seconds for 100,000), become one
// band spanning the lowest and highest interval end of each slice.
const DECIMATE_ABOVE = 1000, DECIMATE_SLICES = 500;
// The options that hold a decimated line (a zoom into them is worth decimating again).
const DECIMATED = new WeakSet();
export const isDecimated = (option) => DECIMATED.has(option);

// `pts` ({x, ...}, sorted by x) decimated as above; `of(p)` is a point's {v, lo, hi}, or null for
// a failed point. Returns {pts: the points kept, band: [x, lo, hi] vertices in x order}.
// `zoom` ([lo, hi] of x, or null): the window of a chart zoomed into, over which the points in it
// are decimated; of the points outside it are kept only the nearest on each side (the line runs
// on to the plot's edge) and the first and last (the axis keeps its extent, and so the zoom
// window its place).
export function decimate(pts, logX, of, zoom = null) {
  if (zoom) {
    let i0 = 0, i1 = pts.length - 1;
    while (i0 < pts.length && pts[i0].x < zoom[0]) ++i0;
    while (i1 >= 0 && pts[i1].x > zoom[1]) --i1;
    const inner = i0 <= i1 ? decimate(pts.slice(i0, i1 + 1), logX, of) : {pts: [], band: []};
    const left = [pts[0], pts[i0 - 1]].filter((p, i, all) => p && i0 > 0 && all.indexOf(p) === i);
    const right = [pts[i1 + 1], pts[pts.length - 1]].filter((p, i, all) => p && i1 < pts.length - 1 && all.indexOf(p) === i);
    return {pts: [...left, ...inner.pts, ...right], band: inner.band};
  }
  const pos = (x) => (logX ? (x > 0 ? Math.log2(x) : -Infinity) : x);
  let x0 = Infinity, x1 = -Infinity;
  for (const p of pts) {
    const u = pos(p.x);
    if (Number.isFinite(u)) { x0 = Math.min(x0, u); x1 = Math.max(x1, u); }
  }
  const width = x1 - x0 || 1;
  const kept = [], band = [];
  let slice = null;
  const flush = () => {
    if (!slice) return;
    const out = [slice.min, slice.max, slice.gap].filter((p, i, all) => p && all.indexOf(p) === i);
    kept.push(...out.sort((a, b) => a.x - b.x));
    if (slice.lo <= slice.hi) band.push([slice.first, slice.lo, slice.hi], [slice.last, slice.lo, slice.hi]);
  };
  for (const p of pts) {
    const u = pos(p.x);
    const k = Number.isFinite(u) ? Math.min(DECIMATE_SLICES - 1, Math.floor(((u - x0) / width) * DECIMATE_SLICES)) : 0;
    if (!slice || slice.k !== k) {
      flush();
      slice = {k, min: null, max: null, gap: null, lo: Infinity, hi: -Infinity, first: p.x, last: p.x};
    }
    slice.last = p.x;
    const m = of(p);
    if (!m) { slice.gap = slice.gap || p; continue; }
    if (!slice.min || m.v < of(slice.min).v) slice.min = p;
    if (!slice.max || m.v > of(slice.max).v) slice.max = p;
    if (Number.isFinite(m.lo) && Number.isFinite(m.hi)) {
      slice.lo = Math.min(slice.lo, m.lo);
      slice.hi = Math.max(slice.hi, m.hi);
    }
  }
  flush();
  // The first and last points too, so that the line ends where its values do.
  if (kept[0] !== pts[0]) kept.unshift(pts[0]);
  if (kept[kept.length - 1] !== pts[pts.length - 1]) kept.push(pts[pts.length - 1]);
  return {pts: kept, band};
}

// A decimated line's 95% intervals as one shaded band: `band` holds [x, lo, hi] vertices. Drawn
// once, as a polygon, for the first vertex in the zoom window (the others draw nothing).
function ciBand(name, band, color) {
  return {
    name, type: 'custom', data: band, z: 1, silent: true, legendHoverLink: false, band: true,
    itemStyle: {color}, encode: {x: 0, y: [1, 2]}, clip: true,
    renderItem(params, api) {
      if (params.dataIndexInside !== 0) return null;
      const points = band.map(([x, , hi]) => api.coord([x, hi]));
      for (let i = band.length - 1; i >= 0; --i) points.push(api.coord([band[i][0], band[i][1]]));
      return {type: 'polygon', shape: {points}, style: {fill: api.visual('color'), opacity: 0.25}};
    },
  };
}

function paramsText(params, name) {
  const text = Object.entries(params).map(([k, v]) => `${escapeHtml(k)}=${escapeHtml(v)}`).join(', ');
  return name ? `${text} <b>${escapeHtml(name.length > 80 ? `${name.slice(0, 80)}…` : name)}</b>` : text;
}

// Kernel names come from imported files; tooltips are HTML.
function escapeHtml(s) {
  return visibleText(s).replace(/[&<>"']/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'})[c]);
}

// A variant's colour, the same in every chart of its job: its place in the job's variants.
export function variantColor(variants, name) {
  return PALETTE[Math.max(0, variants.indexOf(name)) % PALETTE.length];
}

// The metric against parameter `x`, one line per value of `by`, or per variant of a job with
// `variants` (their names, in the job's order), or one line; CI95 bars. `rows` are already
// restricted to the slice the selectors fix.
export function sweepOption({rows, x, by, variants, metric, logX, animate, zoom}) {
  const keyOf = variants ? (r) => r.variant : by ? (r) => r.params[by] : () => '';
  const groups = new Map();
  for (const r of rows) {
    // A failed point has no value: it breaks its line (a gap), rather than the line running
    // straight on from its neighbours as though it had been measured between them.
    const m = r.status === 'ok' ? metricOf(r, metric) : null;
    if (!m && r.status === 'ok') continue;
    const key = keyOf(r);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push({x: r.params[x], m, r});
  }
  const keys = variants ? variants.filter((v) => groups.has(v)) : [...groups.keys()].sort((a, b) => a - b);
  const series = [];
  keys.forEach((key, i) => {
    const all = groups.get(key).sort((a, b) => a.x - b.x);
    const dense = all.length > DECIMATE_ABOVE ? decimate(all, logX, (p) => p.m, zoom) : null;
    const pts = dense ? dense.pts : all;
    const color = variants ? variantColor(variants, key) : PALETTE[i % PALETTE.length];
    const name = variants ? key : by ? `${by}=${key}` : METRICS[metric].short;
    series.push({
      name, type: 'line', color, showSymbol: pts.length <= 200, symbolSize: 5,
      data: pts.map((p) => (p.m ? {value: [p.x, p.m.v], params: p.r.params, name: p.r.name || p.r.variant, ci: [p.m.lo, p.m.hi]}
                                : {value: [p.x, null], params: p.r.params, failed: true})),
    });
    const bars = dense ? [] : pts.filter((p) => p.m && Number.isFinite(p.m.lo) && Number.isFinite(p.m.hi));
    if (dense && dense.band.length) series.push(ciBand(`${name} 95% CI`, dense.band, color));
    if (bars.length) series.push(errorBars(`${name} 95% CI`, bars.map((p) => [p.x, p.m.lo, p.m.hi]), color));
  });
  const legend = Boolean(by || variants);
  return decimatedIf(series, {
    ...baseOption(animate),
    grid: {...baseOption(animate).grid, top: legend ? TOP_LEGEND : TOP_PLAIN},
    legend: legend ? legendBand(series.filter((s) => s.type === 'line').map((s) => s.name)) : undefined,
    tooltip: {trigger: 'item', confine: true, formatter: (p) => p.data && p.data.failed ? `${paramsText(p.data.params)}<br>failed`
      : p.data && p.data.params
      ? `${paramsText(p.data.params, p.data.name)}<br>${METRICS[metric].label}: <b>${fmt(p.data.value[1])}</b>` +
        (Number.isFinite(p.data.ci[0]) ? `<br>95% CI ${fmt(p.data.ci[0])} – ${fmt(p.data.ci[1])}` : '') : ''},
    xAxis: valueXAxis(x, logX, [...groups.values()].flatMap((g) => [g[0].x, g[g.length - 1].x])),
    yAxis: {type: 'value', name: METRICS[metric].label, scale: metric === 'time' ? false : true,
            nameTextStyle: {align: 'left'}, axisLabel: {formatter: axisNumber}},
    dataZoom: [{type: 'inside', xAxisIndex: 0}],
    series,
  });
}

// `option`, noted as decimated where one of its `series` is a decimated line's band.
function decimatedIf(series, option) {
  if (series.some((s) => s.band)) DECIMATED.add(option);
  for (const s of series) delete s.band;
  return option;
}

// A kernel's name as an axis label: its function, without the return type, template arguments
// and parameters ("void gemm<float, 64>(float const*, int)" is "gemm"); the tooltip has it whole.
function kernelLabel(name) {
  let out = '', depth = 0;
  for (const c of String(name || '').split('(')[0]) {
    if (c === '<') ++depth;
    else if (c === '>') depth = Math.max(0, depth - 1);
    else if (!depth) out += c;
  }
  return out.trim().split(/\s+/).pop() || String(name || '');
}

// The metric of an imported job's kernels: one bar per kernel (`x` numbers them), with CI95 bars
// where the source gave an interval. The kernels are categories, named on the x axis, not points
// of a sweep: no line joins one to the next.
export function kernelsOption({rows, x, metric, animate}) {
  const pts = [...rows].sort((a, b) => a.params[x] - b.params[x]).map((r) => ({r, m: r.status === 'ok' ? metricOf(r, metric) : null}));
  const labels = pts.map((p) => visibleText(`${p.r.params[x]} ${kernelLabel(p.r.name)}`));
  const name = METRICS[metric].short;
  const series = [{
    name, type: 'bar', color: PALETTE[0], barMaxWidth: 40,
    data: pts.map((p) => (p.m ? {value: p.m.v, params: p.r.params, name: p.r.name, ci: [p.m.lo, p.m.hi]}
                              : {value: null, params: p.r.params, name: p.r.name, failed: p.r.status !== 'ok'})),
  }];
  const bars = pts.map((p, i) => [labels[i], p.m]).filter(([, m]) => m && Number.isFinite(m.lo) && Number.isFinite(m.hi));
  if (bars.length) series.push(errorBars(`${name} 95% CI`, bars.map(([l, m]) => [l, m.lo, m.hi]), '#111827'));
  // Past a few kernels the labels are turned, to fit side by side; each is cut to its room.
  const turned = labels.length > 4;
  return {
    ...baseOption(animate),
    grid: {...baseOption(animate).grid, left: turned ? 110 : 70, bottom: turned ? 100 : 55},
    tooltip: {trigger: 'item', confine: true, formatter: (p) => !p.data || !p.data.params ? ''
      : p.data.value === null ? `${paramsText(p.data.params, p.data.name)}<br>${p.data.failed ? 'failed' : `no ${METRICS[metric].label}`}`
      : `${paramsText(p.data.params, p.data.name)}<br>${METRICS[metric].label}: <b>${fmt(p.data.value)}</b>` +
        (Number.isFinite(p.data.ci[0]) ? `<br>95% CI ${fmt(p.data.ci[0])} – ${fmt(p.data.ci[1])}` : '')},
    xAxis: {type: 'category', data: labels, name: x, nameLocation: 'middle', nameGap: turned ? 85 : 30,
            axisLabel: {rotate: turned ? 30 : 0, width: turned ? 110 : Math.floor(440 / labels.length), overflow: 'truncate',
                        interval: labels.length > 40 ? Math.ceil(labels.length / 40) - 1 : 0}},
    yAxis: {type: 'value', name: METRICS[metric].label, nameTextStyle: {align: 'left'}, axisLabel: {formatter: axisNumber}},
    dataZoom: [{type: 'inside', xAxisIndex: 0}],
    series,
  };
}

// An x axis of parameter values `values`, linear or log. ECharts spaces a log axis's ticks by
// powers of ten in the exponent, so a sweep over ten doublings or more got ticks at its ends
// only: its interval (in doublings) is set here for about six ticks.
function valueXAxis(x, logX, values) {
  const axis = {type: logX ? 'log' : 'value', logBase: 2, name: logX ? `${x} (log scale)` : x, nameLocation: 'middle', nameGap: 30,
                scale: true, axisLabel: {formatter: axisNumber}};
  if (logX) {
    let lo = Infinity, hi = -Infinity;
    for (const v of values) if (v > 0) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    const span = lo <= hi ? Math.log2(hi) - Math.log2(lo) : 0;
    if (span >= 6) {
      axis.interval = Math.ceil(span / 6);
      // Ends at the powers of two around the values: with an interval, ECharts rounded a sweep
      // to 10,240,000 (2^23.3) up to 2^30, leaving a third of the plot empty.
      axis.min = 2 ** Math.floor(Math.log2(lo));
      axis.max = 2 ** Math.ceil(Math.log2(hi));
    }
  }
  return axis;
}

// What a job with variants measures its speedups over: the baseline variant when it names one,
// else the slowest variant of each point. `member` is the rows' `comparison` member to read.
export function speedupBasis(baseline) {
  return baseline ? {member: 'over_baseline', title: `speedup over ${baseline}`, short: `over ${baseline}`}
                  : {member: 'over_slowest', title: 'speedup over the slowest variant', short: 'over the slowest variant'};
}

// A row's speedup over the job's basis (speedupBasis), with its 95% interval: null when the row
// has none (a failed point, or the baseline failed at its point).
export function variantSpeedup(row, basis) {
  const c = row.status === 'ok' && row.comparison && row.comparison[basis.member];
  return c && Number.isFinite(c.speedup) ? {v: c.speedup, ci: Array.isArray(c.ci95) ? c.ci95 : null, over: c.variant} : null;
}

// Each variant's speedup against parameter `x`, over the baseline variant (or the slowest variant
// of each point), with the 95% interval of the interleaved samples' paired ratios. The baseline
// itself is the 1× line. `rows` are restricted to the slice the selectors fix.
export function variantSpeedupOption({rows, x, variants, baseline, logX, animate, zoom}) {
  const basis = speedupBasis(baseline);
  const series = [];
  const xs = [];
  let top = 1;
  for (const v of variants) {
    if (v === baseline) continue;
    const pts = [];
    for (const r of rows) {
      const s = r.variant === v && variantSpeedup(r, basis);
      if (s) pts.push({x: r.params[x], s, r});
    }
    if (!pts.length) continue;
    pts.sort((a, b) => a.x - b.x);
    xs.push(pts[0].x, pts[pts.length - 1].x);
    for (const p of pts) top = Math.max(top, p.s.ci ? p.s.ci[1] : p.s.v);
    const dense = pts.length > DECIMATE_ABOVE
      ? decimate(pts, logX, (p) => ({v: p.s.v, lo: p.s.ci ? p.s.ci[0] : NaN, hi: p.s.ci ? p.s.ci[1] : NaN}), zoom) : null;
    const shown = dense ? dense.pts : pts;
    const color = variantColor(variants, v);
    series.push({
      name: v, type: 'line', color, showSymbol: shown.length <= 200, symbolSize: 5,
      data: shown.map((p) => ({value: [p.x, p.s.v], params: p.r.params, variant: v, over: p.s.over, ci: p.s.ci})),
    });
    const bars = dense ? [] : pts.filter((p) => p.s.ci);
    if (dense && dense.band.length) series.push(ciBand(`${v} 95% CI`, dense.band, color));
    if (bars.length) series.push(errorBars(`${v} 95% CI`, bars.map((p) => [p.x, p.s.ci[0], p.s.ci[1]]), color));
  }
  if (series.length) {
    series[0].markLine = {silent: true, symbol: 'none', data: [{yAxis: 1}], lineStyle: {color: '#6b7280'},
                          label: {formatter: baseline ? `1× ${baseline}` : '1×', position: 'insideStartTop'}};
  }
  return decimatedIf(series, {
    ...baseOption(animate),
    grid: {...baseOption(animate).grid, top: TOP_LEGEND},
    legend: legendBand(series.filter((s) => s.type === 'line').map((s) => s.name)),
    tooltip: {trigger: 'item', confine: true, formatter: (p) => p.data && p.data.failed ? `${paramsText(p.data.params)}<br>failed`
      : p.data && p.data.params
      ? `${paramsText(p.data.params, p.data.variant)}<br>${fmt(p.data.value[1])}× over ${escapeHtml(p.data.over)}` +
        (p.data.ci ? `<br>95% CI ${fmt(p.data.ci[0])}× – ${fmt(p.data.ci[1])}×` : '') : ''},
    xAxis: valueXAxis(x, logX, xs),
    yAxis: {type: 'value', name: `${basis.title} (×)`, nameTextStyle: {align: 'left'}, min: 0,
            max: headroom({max: top}), axisLabel: {formatter: axisNumber}},
    dataZoom: [{type: 'inside', xAxisIndex: 0}],
    series,
  });
}

// Made when first needed: a page's first Intl object costs ~25 ms (ICU's data), which at
// module load would hold back every view's first request.
let COMPACT = null;
function compact(v) {
  if (Math.abs(v) < 10000) return String(v);
  COMPACT = COMPACT || new Intl.NumberFormat('en', {notation: 'compact', maximumSignificantDigits: 3});
  return COMPACT.format(v);
}

function fmt(v) {
  if (!Number.isFinite(v)) return '—';
  const a = Math.abs(v);
  return a >= 1000 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : a >= 1 ? v.toFixed(2) : v.toPrecision(3);
}

// Where the pointer is over a chart's element, in the chart's pixels, for tooltips that need
// more than the element under it (the image heatmap's cells). A capture listener, so the
// position is current before ECharts' own handlers (which call the tooltip) run.
export function trackPointer(el) {
  const pointer = {x: NaN, y: NaN};
  el.addEventListener('mousemove', (e) => {
    const r = el.getBoundingClientRect();
    pointer.x = e.clientX - r.left;
    pointer.y = e.clientY - r.top;
  }, {capture: true});
  return pointer;
}

// A heatmap of many cells as one image. ECharts' heatmap makes an element per cell, about 15 µs
// each (0.1-0.2 s for 100 × 100 on the development VM); this draws one pixel per cell, scales
// it to the grid without smoothing, and finds the cell under the pointer for the tooltip. The
// colours are the visualMap's (its gradient, linear in RGB); cells outside the range the
// visualMap's handles select are left out, as ECharts leaves them out of its heatmap.
// `cells`: (x index, y index, value) triples; kept in the series as `cells` (a typed array,
// which ECharts copies at once where it would clone 10,000 little arrays).
function imageHeatmap({name, cells, nx, ny, lo, hi, colors, pointer, tooltip}) {
  // The gradient in 1024 steps (finer than the eye tells apart), as RGB bytes.
  const STEPS = 1024, stops = colors.map((c) => echarts.color.parse(c)), lut = new Uint8Array(STEPS * 3);
  for (let s = 0; s < STEPS; ++s) {
    const f = (s / (STEPS - 1)) * (stops.length - 1);
    const k = Math.min(stops.length - 2, Math.floor(f)), u = f - k, a = stops[k], b = stops[k + 1];
    for (let i = 0; i < 3; ++i) lut[s * 3 + i] = Math.round(a[i] + (b[i] - a[i]) * u);
  }
  const range = {lo, hi};  // the visualMap's selection, moved by its handles (see setRange)
  let at = null;  // cell number by position, made for the first tooltip
  let layout = null;  // where the last drawing put cell (0, 0) and the cell size, in pixels
  let image = null;  // the cells as an nx × ny image, one pixel each, redrawn when the range moves
  function paint() {
    image = document.createElement('canvas');
    image.width = nx;
    image.height = ny;
    const ctx = image.getContext('2d');
    const img = ctx.createImageData(nx, ny);
    const scale = (STEPS - 1) / (hi - lo || 1), px = img.data;
    for (let i = 0; i < cells.length; i += 3) {
      const v = cells[i + 2];
      if (v < range.lo || v > range.hi) continue;
      const c = Math.min(STEPS - 1, Math.max(0, Math.round((v - lo) * scale))) * 3;
      const p = ((ny - 1 - cells[i + 1]) * nx + cells[i]) * 4;  // image rows run down, y runs up
      px[p] = lut[c];
      px[p + 1] = lut[c + 1];
      px[p + 2] = lut[c + 2];
      px[p + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
  }
  function cellAt(xi, yi) {
    if (!at) {
      at = new Map();
      for (let i = 0; i < cells.length; i += 3) at.set(cells[i] * ny + cells[i + 1], i / 3);
    }
    return xi >= 0 && xi < nx && yi >= 0 && yi < ny ? at.get(xi * ny + yi) : undefined;
  }
  return {
    id: 'heatmap-image', name, type: 'custom', data: [[0, 0]], cells, clip: true,
    setRange(selected) {
      [range.lo, range.hi] = selected;
      image = null;
    },
    tooltip: {formatter: () => {
      const i = layout && cellAt(Math.round((pointer.x - layout.x) / layout.w), Math.round((pointer.y - layout.y) / layout.h));
      return i === undefined || i === null ? '' : tooltip(i);
    }},
    renderItem(params, api) {
      if (!image) paint();
      const cs = params.coordSys, dpr = api.getDevicePixelRatio();
      const [x0, y0] = api.coord([0, 0]), [x1, y1] = api.coord([1, 1]);
      layout = {x: x0, y: y0, w: x1 - x0, h: y1 - y0};
      // Drawn here at the grid's size: zrender scales images with smoothing, which would blur
      // cells into each other.
      const out = document.createElement('canvas');
      out.width = Math.max(1, Math.round(cs.width * dpr));
      out.height = Math.max(1, Math.round(cs.height * dpr));
      const ctx = out.getContext('2d');
      ctx.imageSmoothingEnabled = false;
      const left = x0 - layout.w / 2 - cs.x, top = y0 + layout.h * (ny - 0.5) - cs.y;  // h < 0: y runs up
      ctx.drawImage(image, left * dpr, top * dpr, nx * layout.w * dpr, ny * -layout.h * dpr);
      return {type: 'image', style: {image: out, x: cs.x, y: cs.y, width: cs.width, height: cs.height}};
    },
  };
}

// The interval between the labels of a heatmap's x axis of `values`: as many labels as fit side
// by side in the plot (about 360 px wide), each as wide as its text. Twelve labels whatever
// their length ran into each other as soon as they had seven digits (a sweep to 10,240,000).
function labelInterval(values) {
  let chars = 1;
  for (const v of values) chars = Math.max(chars, axisNumber(v).length);
  const fit = Math.max(2, Math.min(12, Math.floor(360 / (7 * chars + 16))));
  return Math.max(0, Math.ceil(values.length / fit) - 1);
}

// What a heatmap shows: a metric (METRICS), or `value` ({label, unit, short, lowerBetter, of(row)},
// a variant's speedup).
function heatValue(metric, value) {
  if (value) return value;
  return {...METRICS[metric], lowerBetter: metric === 'time', of: (r) => { const m = metricOf(r, metric); return m && m.v; }};
}

// The metric (or `value`, heatValue) over two parameters; `rows` restricted to the slice the
// other selectors fix.
// Grids of more than LARGE cells are drawn as one image (imageHeatmap), the series then holding
// its cells in `cells`; `pointer` (trackPointer) finds the cell under the pointer for them.
export function heatmapOption({rows, x, y, metric, value, animate, pointer}) {
  const q = heatValue(metric, value);
  const xs = [...new Set(rows.map((r) => r.params[x]))].sort((a, b) => a - b);
  const ys = [...new Set(rows.map((r) => r.params[y]))].sort((a, b) => a - b);
  const xi = new Map(xs.map((v, i) => [v, i])), yi = new Map(ys.map((v, i) => [v, i]));
  // (x index, y index, value) per cell; tooltips find the row by the cell's number.
  const cells = new Float64Array(rows.length * 3), cellRows = [];
  let lo = Infinity, hi = -Infinity;
  for (const r of rows) {
    const v = q.of(r);
    if (!Number.isFinite(v)) continue;
    const k = cellRows.length * 3;
    cells[k] = xi.get(r.params[x]);
    cells[k + 1] = yi.get(r.params[y]);
    cells[k + 2] = v;
    cellRows.push(r);
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  const n = cellRows.length;
  if (!n) { lo = 0; hi = 1; }
  const cellText = (i) => `${paramsText(cellRows[i].params, cellRows[i].variant)}<br>${q.label}: <b>${fmt(cells[i * 3 + 2])}</b>`;
  // One colour scale for every metric, read the same way: dark is better (a short time, a high
  // throughput) and sits at the top of the scale; its ends say which way is better and its
  // labels carry the unit.
  const time = q.lowerBetter;
  const colors = time ? ['#1e3a8a', '#93c5fd', '#fef3c7'] : ['#fef3c7', '#93c5fd', '#1e3a8a'];
  const image = n > LARGE && pointer;
  const base = baseOption(animate);
  // The image is one item at (0, 0): zooming must not filter it out with the cells left of and
  // below the window.
  if (image) base.toolbox.feature.dataZoom.filterMode = 'none';
  let series;
  if (image) {
    series = imageHeatmap({name: q.short, cells: cells.subarray(0, n * 3), nx: xs.length, ny: ys.length,
                           lo, hi, colors, pointer, tooltip: cellText});
  } else {
    // Plain arrays (not {value, params} objects): ECharts builds cells several times faster.
    const data = [];
    for (let i = 0; i < n; ++i) data.push([cells[i * 3], cells[i * 3 + 1], cells[i * 3 + 2]]);
    series = {name: q.short, type: 'heatmap', data, progressive: 0,
              // As the scale's labels: "899K", not "899449", in a cell 60 pixels wide.
              label: {show: n <= 150, formatter: (p) => axisNumber(p.data[2]), fontSize: 10},
              emphasis: n > LARGE ? {disabled: true} : {itemStyle: {borderColor: '#111', borderWidth: 1}}};
  }
  return {
    ...base,
    // Room on the right for the colour scale and the values at its handles ("134.1 µs").
    grid: {left: 80, right: 180, top: 40, bottom: 60, outerBoundsMode: 'none'},
    tooltip: {confine: true, formatter: (p) => (cellRows[p.dataIndex] ? cellText(p.dataIndex) : '')},
    xAxis: {type: 'category', data: xs.map(String), name: x, nameLocation: 'middle', nameGap: 35,
            splitArea: {show: xs.length <= 50}, axisLabel: {interval: labelInterval(xs), formatter: (v) => axisNumber(Number(v))}},
    yAxis: {type: 'category', data: ys.map(String), name: y, splitArea: {show: ys.length <= 50},
            axisLabel: {interval: Math.max(0, Math.ceil(ys.length / 10) - 1), formatter: (v) => axisNumber(Number(v))}},
    visualMap: {min: lo, max: hi, calculable: true, orient: 'vertical', right: 10, top: 'center',
                inverse: time, text: time ? ['slower', 'faster'] : ['faster', 'slower'],
                formatter: (v) => `${axisNumber(v)} ${q.unit}`,
                inRange: {color: colors}, seriesIndex: image ? [] : undefined},
    series: [series],
  };
}

// Speedup per value of `x` over the job's fitness baseline (rows' `fitness.speedup`), with its
// CI. A job without one has no speedup to show: the slowest point of a sweep is another problem
// size, not another kernel.
export function speedupOption({rows, x, animate}) {
  const pts = rows.filter((r) => r.status === 'ok' && r.fitness && Number.isFinite(r.fitness.speedup))
                  .sort((a, b) => a.params[x] - b.params[x]);
  const data = pts.map((r) => ({value: r.fitness.speedup, params: r.params}));
  const bars = pts.filter((r) => Array.isArray(r.fitness.speedup_ci95))
                  .map((r) => [String(r.params[x]), r.fitness.speedup_ci95[0], r.fitness.speedup_ci95[1]]);
  const title = 'speedup over the baseline';
  const series = [{
    name: title, type: 'bar', data, large: data.length > LARGE, barMaxWidth: 40,
    itemStyle: {color: (p) => (p.value >= 1 ? '#059669' : '#dc2626')},
    markLine: {silent: true, symbol: 'none', data: [{yAxis: 1}], lineStyle: {color: '#6b7280'},
               label: {formatter: '1×'}},
  }];
  if (bars.length) series.push({...errorBars('95% CI', bars, '#111827'), encode: {x: 0, y: [1, 2]}});
  return {
    ...baseOption(animate),
    tooltip: {confine: true, formatter: (p) => p.data && p.data.params
      ? `${paramsText(p.data.params)}<br>${title}: <b>${fmt(p.data.value)}×</b>` : ''},
    xAxis: {type: 'category', data: pts.map((r) => String(r.params[x])), name: x,
            nameLocation: 'middle', nameGap: 30},
    yAxis: {type: 'value', name: 'speedup (×)', max: headroom, axisLabel: {formatter: axisNumber}},
    series,
  };
}

// Ceiling lines of a roofline: bandwidth slope up to the ridge, then flat at the peak.
function ceiling(name, peakTflops, bandwidthGbps, xmin, xmax, style) {
  const ridge = (peakTflops * 1000) / bandwidthGbps;  // FLOP/byte where the two meet
  const data = [[xmin, (xmin * bandwidthGbps) / 1000]];
  if (ridge > xmin && ridge < xmax) data.push([ridge, peakTflops]);
  data.push([xmax, Math.min(peakTflops, (xmax * bandwidthGbps) / 1000)]);
  return {name, type: 'line', data, showSymbol: false, silent: true, z: 1, color: style.color,
          lineStyle: {width: 2, ...style}, tooltip: {show: false}};
}

// Log-log roofline: the device's datasheet ceiling (and its measured one when the device has
// been measured) for the kernel's dtype, and the job's points.
// `dtypes`: the dtypes whose peaks bound the points, one per variant where they differ (an f32
// variant's points sit under the f32 ceiling, not the f16 one); `dtypeColors` colours each
// dtype's ceilings as its first variant when there are several. Points without a FLOP count are
// not drawn, and the chart says so, with `flopsHint` where the job could have given one.
export function rooflineOption({rows, device, dtypes, dtypeColors, variants, flopsHint, animate}) {
  // (intensity, TFLOP/s) pairs per group (a variant, or all the points), with rows beside them
  // for tooltips. Many points go to ECharts as one typed array, which it takes as it is where it
  // would clone thousands of little arrays.
  const groups = new Map((variants || ['points']).map((v) => [v, {xy: [], rows: []}]));
  let aiMin = Infinity, aiMax = -Infinity, n = 0, unplaced = 0;
  for (const r of rows) {
    const m = r.metrics || {};
    if (r.status !== 'ok') continue;
    // A point without FLOPs (a copy, a custom kernel that gives no kernel.flops) has no place on
    // a log axis of FLOP/byte: counted, so that the chart says why it is missing.
    if (!(m.arithmetic_intensity > 0) || !(m.tflops > 0)) {
      ++unplaced;
      continue;
    }
    const g = groups.get(variants ? r.variant : 'points');
    if (!g) continue;
    g.xy.push(m.arithmetic_intensity, m.tflops);
    g.rows.push(r);
    ++n;
    aiMin = Math.min(aiMin, m.arithmetic_intensity);
    aiMax = Math.max(aiMax, m.arithmetic_intensity);
  }
  const large = n > LARGE;
  const sheet = device && device.datasheet;
  const measured = device && device.measured;
  const bounded = (p, d) => !!p && boundOf(p, d) > 0 && p.bandwidth_gbps > 0;
  const ridges = [sheet, measured].flatMap((p) => dtypes.filter((d) => bounded(p, d))
    .map((d) => (boundOf(p, d) * 1000) / p.bandwidth_gbps));
  // Whole decades, so the log axis ends on round labels.
  const xmin = 10 ** Math.floor(Math.log10(Math.min(0.05, aiMin / 4, ...ridges.map((r) => r / 100))));
  const xmax = 10 ** Math.ceil(Math.log10(Math.max(1000, n ? aiMax * 4 : 0, ...ridges.map((r) => r * 10))));
  const series = [];
  // Each source's ceilings: one line per peak, its dtypes named together (f16/bf16 share one).
  // A dtype's ceiling is the peak its points are judged by: the vector units' f32 peak where that
  // is the higher (a CPU, a weak GEMM library), so that a point's height against its line reads
  // as its % of roof.
  const several = dtypes.length > 1;
  const gridBottom = several ? 125 : 100;  // several dtypes: a longer legend under the plot
  const ceilings = (peaks, word, style, fmtPeak) => {
    const drawn = new Set();
    for (const d of dtypes) {
      if (!bounded(peaks, d) || drawn.has(boundOf(peaks, d))) continue;
      const peak = boundOf(peaks, d);
      drawn.add(peak);
      const same = dtypes.filter((e) => bounded(peaks, e) && boundOf(peaks, e) === peak).join('/');
      const units = onVectorUnits(peaks, d) ? ' on the vector units' : '';
      series.push(ceiling(`${word} ${same}${units} (${fmtPeak(peak)} TFLOP/s, ${fmtPeak(peaks.bandwidth_gbps)} GB/s)`,
                          peak, peaks.bandwidth_gbps, xmin, xmax,
                          {...style, color: several && dtypeColors && dtypeColors[d] ? dtypeColors[d] : style.color}));
    }
  };
  ceilings(sheet, 'datasheet', {color: '#111827'}, (v) => v);
  ceilings(measured, measuredWord(measured), {color: '#d97706', type: 'dashed'}, fmt);
  for (const [name, g] of groups) {
    if (!g.rows.length && variants) continue;
    const xy = Float64Array.from(g.xy);
    series.push({
      name, type: 'scatter', data: large ? xy : g.rows.map((r, i) => [xy[i * 2], xy[i * 2 + 1]]),
      dimensions: large ? ['x', 'y'] : undefined, ptRows: g.rows,
      // At 4 px a square reads as a dot, and thousands of them draw in a fraction of the time circles take.
      symbol: large ? 'rect' : 'circle', symbolSize: n > 500 ? 4 : 7,
      large, largeThreshold: LARGE, itemStyle: {color: variants ? variantColor(variants, name) : '#2563eb', opacity: 0.75},
      // Drawn in one go: from 10,000 points a large scatter is drawn 5,000 a frame on a canvas layer
      // of its own, one more canvas to make and composite and its last points a frame later.
      progressive: 0,
    });
  }
  // The rows behind each scatter's points, for tooltips (kept out of the option ECharts copies).
  const ptRows = new Map(series.filter((s) => s.ptRows).map((s) => [s.name, s.ptRows]));
  for (const s of series) delete s.ptRows;
  return {
    ...baseOption(animate),
    // The ceilings' names are long: their legend goes under the plot, wrapping, where it is clear
    // of the toolbox and the axis names. Variants, however many, have the other charts' legend
    // in its band above the plot, scrolling.
    grid: {...baseOption(animate).grid, top: variants ? TOP_LEGEND : TOP_PLAIN, bottom: gridBottom},
    legend: [{bottom: 0, left: 10, right: 10, type: 'plain',
              data: series.filter((s) => !variants || s.type === 'line').map((s) => s.name)},
             ...(variants ? [legendBand(series.filter((s) => s.type === 'scatter').map((s) => s.name))] : [])],
    tooltip: {trigger: 'item', confine: true, formatter: (p) => {
      const r = p.seriesType === 'scatter' && (ptRows.get(p.seriesName) || [])[p.dataIndex];
      return r ? `${paramsText(r.params, r.name || r.variant)}<br>${fmt(r.metrics.tflops)} TFLOP/s at ` +
                 `${fmt(r.metrics.arithmetic_intensity)} FLOP/B<br>${fmt(r.time_us.median)} µs · ` +
                 (r.metrics.bound ? `${fmt(r.metrics.roof_pct)}% of roof · ${r.metrics.bound}-bound` : 'no roof: device not in the catalog') : '';
    }},
    xAxis: {type: 'log', name: 'arithmetic intensity (FLOP/byte)', nameLocation: 'middle',
            nameGap: 30, min: xmin, max: xmax, axisLabel: {formatter: axisNumber}},
    yAxis: {type: 'log', name: 'TFLOP/s', nameTextStyle: {align: 'left'}, axisLabel: {formatter: axisNumber}},
    graphic: unplaced ? [unplacedNote(unplaced, n, flopsHint, gridBottom)] : undefined,
    series,
  };
}

// What the roofline says of the `unplaced` measured points it cannot draw (no FLOP count), beside
// the `placed` ones: at the plot's bottom right (`bottom`: the plot's bottom edge), under every
// ceiling, where a point is seldom (much work per byte, done slowly). `hint`: how the job could
// give its points a FLOP count, where it could.
function unplacedNote(unplaced, placed, hint, bottom) {
  const which = placed ? `${unplaced} of the points` : unplaced === 1 ? 'The point' : `The ${unplaced} points`;
  const text = `${which} ${unplaced === 1 ? 'has' : 'have'} no FLOP count, so no place on this chart` +
    (hint ? `:\n${hint}` : '');
  return {type: 'text', silent: true, z: 100, right: 38, bottom: bottom + 8,
          style: {text, fill: '#4b5563', font: '13px sans-serif', backgroundColor: 'rgba(255,255,255,0.9)',
                  lineHeight: 18, padding: [4, 8], borderRadius: 4}};
}

// What a device's non-datasheet roofline is: measured on the GPU, or simulated by the mock engine
// (its `method` says which).
export function measuredWord(measured) {
  return measured && /^simulated/.test(measured.method || '') ? 'simulated' : 'measured';
}

// The colours of a comparison's verdicts (view_compare.js): faster and slower than the baseline
// beyond both medians' 95% intervals, or the same within them.
export const VERDICT_COLORS = {faster: '#059669', slower: '#dc2626', same: '#9ca3af'};
// Series colours for several compared jobs: none of the verdicts' green, red or grey.
const JOB_COLORS = ['#2563eb', '#7c3aed', '#d97706', '#0891b2', '#db2777', '#475569'];

// Speedup of each job over a baseline job, per shared-parameter key (compare view). With one job
// compared, each bar has its verdict's colour (`verdicts[0][k]`); with several, each job its own
// colour (the table gives the verdicts). One job's bars beyond LARGE are three series, one per
// verdict, each holding its bars and a gap at the others', drawn over each other: ECharts'
// large mode (one path a series) takes no colour per bar, and without it 100,000 bars of their
// own colour took seconds. A large series holds its bars as (category index, speedup) pairs in one
// typed array: from an array of numbers ECharts made every bar an id from its category's name,
// half of the 0.3–0.4 s that drawing two 100,000-point jobs' comparison took in one task.
export function compareOption({keys, jobs, speedups, verdicts, animate}) {
  const one = jobs.length === 1;
  const large = keys.length > LARGE;
  const pairs = (values, keep) => {
    const xy = new Float64Array(values.length * 2);
    values.forEach((v, k) => { xy[2 * k] = k; xy[2 * k + 1] = keep(k) ? v : NaN; });
    return {data: xy, dimensions: ['x', 'y'], encode: {x: 0, y: 1}};
  };
  const series = one && large
    ? ['faster', 'slower', 'same'].map((verdict) => ({
      name: verdict, type: 'bar', color: VERDICT_COLORS[verdict], large: true, barMaxWidth: 30, barGap: '-100%',
      ...pairs(speedups[0], (k) => verdicts[0][k] === verdict),
    }))
    : jobs.map((j, i) => ({
      name: visibleText(`#${j.id} ${j.name}`), type: 'bar', color: JOB_COLORS[i % JOB_COLORS.length],
      ...(large ? pairs(speedups[i], () => true)
        : {data: one ? speedups[i].map((v, k) => ({value: v, itemStyle: {color: VERDICT_COLORS[verdicts[i][k]]}}))
                     : speedups[i]}),
      large, barMaxWidth: 30,
    }));
  if (series.length) {
    series[0].markLine = {silent: true, symbol: 'none', data: [{yAxis: 1}],
                          lineStyle: {color: '#6b7280'}, label: {formatter: '1×'}};
  }
  return {
    ...baseOption(animate),
    legend: one ? undefined : legendBand(series.map((s) => s.name)),
    tooltip: {trigger: 'axis', confine: true, valueFormatter: (v) => `${fmt(v)}×`,
              // Large series hold (point, speedup) pairs: each bar's speedup is its pair's second
              // member, and of a bar split by verdict only the series that holds it is shown.
              formatter: large ? (ps) => {
                const shown = ps.filter((p) => Number.isFinite(p.value[1]));
                return shown.length ? escapeHtml(shown[0].axisValueLabel) + shown.map((p) =>
                  `<br>${p.marker}${escapeHtml(p.seriesName)}: <b>${fmt(p.value[1])}×</b>`).join('') : '';
              } : undefined},
    // ECharts' automatic label interval let rotated labels of a thousand points run into each other
    // (it measured them unrotated): at most about 40 labels, each with room for its text.
    xAxis: {type: 'category', data: keys.map(visibleText),
            axisLabel: {rotate: keys.length > 12 ? 40 : 0, interval: keys.length > 40 ? Math.ceil(keys.length / 40) - 1 : 'auto'}},
    yAxis: {type: 'value', name: 'speedup over baseline (×)', nameTextStyle: {align: 'left'},
            max: headroom, axisLabel: {formatter: axisNumber}},
    // Rotated labels reach left of the first bar: room for them.
    grid: {left: keys.length > 12 ? 120 : 70, right: 30, top: one ? TOP_PLAIN : TOP_LEGEND,
           bottom: keys.length > 12 ? 120 : 55, outerBoundsMode: 'none'},
    dataZoom: keys.length > 60 ? [{type: 'inside'}, {type: 'slider', bottom: 5}] : undefined,
    series,
  };
}

// Device view: its ceilings for each dtype it has a peak for.
const FLOAT_DTYPES = ['f64', 'f32', 'f16', 'bf16'];

// Whether `peaks` (a datasheet's or a measured roofline) has a ceiling for `dtype` (or
// `vector_f32`, the vector units' f32 peak).
function ceilingOf(peaks, dtype) {
  return !!peaks && peaks[`${dtype}_tflops`] > 0 && peaks.bandwidth_gbps > 0;
}

// The peak that judges a kernel of `dtype` in `peaks`, as the analysis takes it: an f32, f16 or
// bf16 kernel may compute on the vector units, whose f32 peak then bounds it where it is the
// higher.
function boundOf(peaks, dtype) {
  const own = peaks[`${dtype}_tflops`] || 0;
  return dtype === 'f64' ? own : Math.max(own, peaks.vector_f32_tflops || 0);
}

// Whether `dtype`'s bound in `peaks` is the vector units' peak, above its own.
function onVectorUnits(peaks, dtype) {
  return dtype !== 'f64' && (peaks.vector_f32_tflops || 0) > (peaks[`${dtype}_tflops`] || 0);
}

// Whether a device has a ceiling to draw: datasheet or measured peaks for a floating dtype, with
// a bandwidth.
export function hasPeaks(device) {
  return FLOAT_DTYPES.some((d) => ceilingOf(device.datasheet, d) || ceilingOf(device.measured, d));
}

// The ceilings of a device: its datasheet's (solid) and its measured ones (dashed), either alone
// where it has only one (a CPU or a GPU not in the catalog is known by its measured roofline).
export function deviceRooflineOption(device) {
  const sheet = device.datasheet || {};
  const measured = device.measured || {};
  const series = [];
  const dtypes = FLOAT_DTYPES.filter((d) => ceilingOf(sheet, d) || ceilingOf(measured, d));
  // The vector units' measured f32 peak has a line of its own where it judges some dtype's
  // kernels above that dtype's GEMM (a CPU, a weak or missing library).
  const measuredDtypes = dtypes.filter((d) => ceilingOf(measured, d));
  if (ceilingOf(measured, 'vector_f32') && dtypes.some((d) => onVectorUnits(measured, d))) {
    measuredDtypes.push('vector_f32');
  }
  const ridges = [...dtypes.filter((d) => ceilingOf(sheet, d)).map((d) => [sheet, d]),
                  ...measuredDtypes.map((d) => [measured, d])]
    .map(([p, d]) => (p[`${d}_tflops`] * 1000) / p.bandwidth_gbps);
  // Whole decades, so the log axis ends on round labels.
  const xmin = 10 ** Math.floor(Math.log10(Math.min(0.05, ...ridges.map((r) => r / 100))));
  const xmax = 10 ** Math.ceil(Math.log10(Math.max(1000, ...ridges.map((r) => r * 10))));
  const seen = new Set();
  dtypes.forEach((d, i) => {
    if (!ceilingOf(sheet, d)) return;
    const peak = sheet[`${d}_tflops`];
    if (seen.has(peak)) return;  // f16 and bf16 usually share one line
    seen.add(peak);
    const same = dtypes.filter((e) => ceilingOf(sheet, e) && sheet[`${e}_tflops`] === peak).join('/');
    series.push(ceiling(`datasheet ${same}: ${peak} TFLOP/s`, peak, sheet.bandwidth_gbps, xmin,
                        xmax, {color: PALETTE[i % PALETTE.length]}));
  });
  // Measured ceilings: peaks within 2% of each other share a dashed line, as on the datasheet.
  const drawn = [];
  measuredDtypes.forEach((d) => {
    const peak = measured[`${d}_tflops`];
    if (drawn.some((p) => Math.abs(p - peak) <= 0.02 * p)) return;
    drawn.push(peak);
    const same = measuredDtypes.filter((e) => Math.abs(measured[`${e}_tflops`] - peak) <= 0.02 * peak)
      .map((e) => (e === 'vector_f32' ? 'f32 vector units' : e));
    series.push(ceiling(`${measuredWord(measured)} ${same.join('/')}: ${fmt(peak)} TFLOP/s`, peak,
                        measured.bandwidth_gbps, xmin, xmax,
                        {color: PALETTE[dtypes.indexOf(d) >= 0 ? dtypes.indexOf(d) : dtypes.length],
                         type: 'dashed'}));
  });
  return {
    animation: false, color: PALETTE,
    // Up to four ceilings: the legend wraps onto two lines rather than hiding some behind a pager.
    grid: {left: 60, right: 20, top: 84, bottom: 45, outerBoundsMode: 'none'},
    legend: {top: 0, left: 10, right: 10, type: 'plain'},
    xAxis: {type: 'log', name: 'FLOP/byte', nameLocation: 'middle', nameGap: 28, min: xmin, max: xmax,
            axisLabel: {formatter: axisNumber}},
    yAxis: {type: 'log', name: 'TFLOP/s', nameTextStyle: {align: 'left'}, axisLabel: {formatter: axisNumber}},
    series,
  };
}
