// Jobs: a filterable, live list (status, progress, device, labels, age), with cancel buttons and
// a selection to compare or delete; a job deleted anywhere leaves it. In a fleet the device is
// "node / index": the node that runs or ran it. Only the rows near the window's view are in the
// page (spacer rows keep the list's height), so thousands of jobs loaded cost the DOM of a few
// dozen rows.

import {del, get, post} from './api.js';
import {age, emptyState, errorBox, fmtTime, h, labelChips, progressBar, setQuery, statusBadge, throttle, userText} from './dom.js';
import {deviceLabel, nodesOf, placementText} from './fleet.js';

const STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'];
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);
const PAGE = 100;
// Rows drawn above and below those in view: a scroll of a screen or so needs no new rows.
const MARGIN_ROWS = 30;

export function mount(root, {query}) {
  const state = {
    status: query.get('status') || '',
    labels: query.getAll('label'),  // "KEY=VALUE"
    jobs: [],
    next: null,
    selected: new Set(),
    error: null,
    nodes: new Set(),  // every node seen, in the devices list or in a job
  };
  const fleet = () => state.nodes.size > 1;
  const statusSelect = h('select', {id: 'filter-status', 'aria-label': 'status'},
                         h('option', {value: ''}, 'any status'),
                         STATUSES.map((s) => h('option', {value: s}, s)));
  statusSelect.value = state.status;
  const labelInput = h('input', {id: 'filter-label', placeholder: 'label KEY=VALUE, …',
                                 value: state.labels.join(', '), size: 28});
  const compareButton = h('button', {id: 'compare-selected', type: 'button', disabled: true,
                                     onclick: () => { location.hash = `#/compare?jobs=${[...state.selected].join(',')}`; }},
                          'Compare selected');
  // Jobs that ended may be deleted, several at once (one request each; the daemon refuses what
  // it must, such as a job without an operator's token where it has operator tokens).
  const deleteButton = h('button', {id: 'delete-selected', type: 'button', class: 'danger', disabled: true,
                                    title: 'delete the selected jobs, which must have ended, and their results',
                                    onclick: () => deleteSelected()}, 'Delete selected');
  // Every job loaded (those the filters match, as far as Load more went), or none: with a
  // status filter, the jobs that failed can go at once.
  const selectAll = h('input', {type: 'checkbox', id: 'select-all', 'aria-label': 'select every job listed',
                                title: 'select every job listed (as far as Load more went)',
                                onchange: (ev) => {
                                  state.selected.clear();
                                  if (ev.target.checked) for (const j of state.jobs) state.selected.add(j.id);
                                  shown.clear();  // the rows drawn again, ticked as chosen
                                  drawRows();
                                  selectionChanged();
                                }});
  function selectionChanged() {
    compareButton.disabled = state.selected.size < 2;
    const chosen = state.jobs.filter((j) => state.selected.has(j.id));
    deleteButton.disabled = chosen.length === 0 || chosen.some((j) => !TERMINAL.has(j.status));
    selectAll.checked = chosen.length > 0 && chosen.length === state.jobs.length;
    selectAll.indeterminate = chosen.length > 0 && chosen.length < state.jobs.length;
  }
  const filters = h('form', {class: 'toolbar', onsubmit: (ev) => { ev.preventDefault(); apply(); }},
                    statusSelect, labelInput, h('button', {type: 'submit'}, 'Filter'),
                    h('span', {class: 'spacer'}), compareButton, deleteButton,
                    h('a', {class: 'button', href: '#/submit'}, 'New job'));
  statusSelect.addEventListener('change', apply);
  const message = h('div');
  const tbody = h('tbody');
  const table = h('table', {id: 'jobs-table', class: 'data'},
                  h('thead', {}, h('tr', {},
                    h('th', {}, selectAll), h('th', {}, 'id'), h('th', {}, 'name'), h('th', {}, 'op'),
                    h('th', {}, 'status'), h('th', {class: 'progress-col'}, 'progress'),
                    h('th', {}, 'device'), h('th', {}, 'labels'),
                    h('th', {class: 'num', title: 'the median time of the job\'s best point: the one with the highest throughput (least time per FLOP, else per byte)'}, 'best point'),
                    h('th', {}, 'submitted'), h('th', {}, ''))),
                  tbody);
  const more = h('button', {type: 'button', class: 'ghost', hidden: true, onclick: () => load(true)}, 'Load more');
  root.append(h('div', {class: 'view-head'}, h('h2', {}, 'Jobs')), filters, message, table, more);

  function apply() {
    state.status = statusSelect.value;
    state.labels = labelInput.value.split(',').map((s) => s.trim()).filter(Boolean);
    const bad = state.labels.find((l) => !/^[^=]+=.*$/.test(l));
    if (bad) {
      showError({type: 'invalid_filter', message: `label filter "${bad}" is not KEY=VALUE`});
      return;
    }
    const q = [];
    if (state.status) q.push(['status', state.status]);
    state.labels.forEach((l) => q.push(['label', l]));
    setQuery(q);
    load(false);
  }

  function url(cursor) {
    const p = new URLSearchParams({limit: String(PAGE)});
    if (state.status) p.set('status', state.status);
    for (const l of state.labels) {
      const i = l.indexOf('=');
      p.append(`label.${l.slice(0, i)}`, l.slice(i + 1));
    }
    if (cursor) p.set('cursor', cursor);
    return `/api/v1/jobs?${p}`;
  }

  function showError(err) {
    message.replaceChildren(errorBox(err));
  }

  let loading = 0;
  async function load(append) {
    const ticket = ++loading;
    try {
      const page = await get(url(append ? state.next : null));
      if (ticket !== loading) return;
      const known = state.jobs.length;
      state.jobs = append ? state.jobs.concat(page.jobs) : page.jobs;
      state.next = page.next_cursor;
      const turned = noteNodes(page.jobs);
      message.replaceChildren();
      // A page more goes below the rows shown, which stay as they are.
      if (append && known && !turned && !table.hidden) {
        drawRows();
        more.hidden = !state.next;
      } else {
        render();
      }
      selectionChanged();  // "every job listed" is no longer so with a page more
    } catch (e) {
      if (ticket === loading) showError(e);
    }
  }

  // Adds the nodes named by `jobs`; true when the list turned into a fleet's (devices are then
  // named "node / index", every row again).
  function noteNodes(jobs, devices = []) {
    const was = fleet();
    for (const n of nodesOf(devices, jobs)) state.nodes.add(n);
    return !was && fleet();
  }

  function matches(job) {
    if (state.status && job.status !== state.status) return false;
    return state.labels.every((l) => {
      const i = l.indexOf('=');
      return (job.labels || {})[l.slice(0, i)] === l.slice(i + 1);
    });
  }

  function row(job) {
    const checkbox = h('input', {type: 'checkbox', 'aria-label': `select job ${job.id}`,
                                 checked: state.selected.has(job.id),
                                 onchange: (ev) => {
                                   ev.target.checked ? state.selected.add(job.id) : state.selected.delete(job.id);
                                   selectionChanged();
                                 }});
    const active = job.status === 'queued' || job.status === 'running';
    const cancel = active && !job.cancel_requested
      ? h('button', {type: 'button', class: 'small danger', onclick: () => cancelJob(job.id)}, 'Cancel')
      : job.cancel_requested && active ? h('span', {class: 'muted'}, 'cancelling…') : '';
    const best = job.summary && job.summary.best
      ? (job.summary.best.held_out ? 'held out' : fmtTime(job.summary.best.median_us)) : '—';
    return h('tr', {dataset: {id: job.id}},
             h('td', {}, checkbox),
             h('td', {}, h('a', {href: `#/jobs/${job.id}`}, `#${job.id}`)),
             h('td', {class: 'job-name'}, h('a', {href: `#/jobs/${job.id}`, title: job.name}, userText(job.name))),
             h('td', {}, job.op),
             h('td', {}, statusBadge(job.status, job.error ? `${job.error.type}: ${job.error.message}` : undefined)),
             h('td', {}, progressBar(job.progress)),
             h('td', {class: 'device', title: job.node ? `node ${job.node}` : undefined},
               job.engine === 'import' ? h('span', {class: 'muted'}, 'imported')
               : job.device === null ? h('span', {class: 'muted'}, placementText(job.requested_device, fleet()))
               : deviceLabel(job.node, job.device, fleet())),
             h('td', {class: 'labels-cell', title: Object.entries(job.labels || {}).map(([k, v]) => `${k}=${v}`).join(', ') || undefined},
               h('div', {}, labelChips(job.labels))),
             h('td', {class: 'num'}, best),
             h('td', {title: job.created_at, dataset: {created: job.created_at}}, age(job.created_at)),
             h('td', {}, cancel));
  }

  function render() {
    if (!state.jobs.length) {
      const filtered = state.status || state.labels.length;
      table.hidden = true;
      tbody.replaceChildren();  // no row of a job that left stays behind, hidden
      shown.clear();
      message.replaceChildren(filtered
        ? emptyState('No jobs match these filters.', h('p', {}, h('a', {href: '#/jobs', onclick: () => {
            statusSelect.value = ''; labelInput.value = ''; setTimeout(apply); }}, 'Show all jobs')))
        : emptyState('No jobs yet.',
                     h('p', {}, 'Submit one from the ', h('a', {href: '#/submit'}, 'submit page'),
                       ', with ', h('code', {}, 'kernelscan submit job.json'), ', or with curl:'),
                     h('pre', {}, `curl -X POST ${location.origin}/api/v1/jobs -d @job.json`)));
    } else {
      // A job that came live to an empty list: the "No jobs yet" note goes.
      if (message.querySelector('.empty')) message.replaceChildren();
      table.hidden = false;
      shown.clear();  // every row made anew (the devices are named otherwise in a fleet)
      drawRows();
    }
    more.hidden = !state.next;
  }

  // The rows drawn, by job id: kept while they stay near the view (a checkbox, a focused button,
  // the row's place), made anew when their job changes.
  const shown = new Map();
  let rowHeight = 34;  // until rows are drawn and measured
  // Draws the rows near the window's view, and spacers for those above and below.
  function drawRows(measure = true) {
    if (table.hidden) return;
    const n = state.jobs.length;
    const top = tbody.getBoundingClientRect().top;  // of the rows, in the window's view
    const first = Math.min(n, Math.max(0, Math.floor(-top / rowHeight) - MARGIN_ROWS));
    const last = Math.min(n, Math.max(first, Math.ceil((window.innerHeight - top) / rowHeight) + MARGIN_ROWS));
    const now = new Map();
    const out = [];
    if (first > 0) out.push(h('tr', {class: 'spacer', style: `height:${first * rowHeight}px`}));
    for (let i = first; i < last; ++i) {
      const job = state.jobs[i];
      const tr = shown.get(job.id) || row(job);
      now.set(job.id, tr);
      out.push(tr);
    }
    if (last < n) out.push(h('tr', {class: 'spacer', style: `height:${(n - last) * rowHeight}px`}));
    shown.clear();
    for (const [id, tr] of now) shown.set(id, tr);
    tbody.replaceChildren(...out);
    // The rows' height as drawn (the spacers stand for rows of the same height).
    if (last - first >= 2) {
      const a = out[first > 0 ? 1 : 0], b = out[out.length - (last < n ? 2 : 1)];
      const measured = (b.offsetTop + b.offsetHeight - a.offsetTop) / (last - first);
      if (measure && measured > 0 && Math.abs(measured - rowHeight) > 0.5) { rowHeight = measured; drawRows(false); }
    }
  }
  let drawQueued = false;
  const onScroll = () => {
    if (drawQueued) return;
    drawQueued = true;
    requestAnimationFrame(() => { drawQueued = false; if (loading !== -1) drawRows(); });
  };
  window.addEventListener('scroll', onScroll, {passive: true});
  window.addEventListener('resize', onScroll);

  async function cancelJob(id) {
    try {
      const job = await post(`/api/v1/jobs/${id}/cancel`);
      upsert(job);
    } catch (e) {
      showError(e);
    }
  }

  async function deleteSelected() {
    const ids = state.jobs.filter((j) => state.selected.has(j.id)).map((j) => j.id);
    if (!ids.length || !confirm(`Delete ${ids.length === 1 ? `job ${ids[0]}` : `${ids.length} jobs`} and their results? This cannot be undone.`)) return;
    deleteButton.disabled = true;
    const refused = [];
    for (const id of ids) {
      try {
        await del(`/api/v1/jobs/${id}`);
        remove(id);  // its job_deleted event may come later
      } catch (e) {
        if (e.status === 404) remove(id); else refused.push([id, e]);
      }
    }
    if (refused.length) {
      const [id, e] = refused[0];
      showError({...e, message: `job ${id}: ${e.message}${refused.length > 1 ? ` (and ${refused.length - 1} more jobs not deleted)` : ''}`});
    }
    selectionChanged();
  }

  function remove(id) {
    const i = state.jobs.findIndex((j) => j.id === id);
    if (i < 0) return;
    state.jobs.splice(i, 1);
    if (state.selected.delete(id)) selectionChanged();
    if (!state.jobs.length) { render(); return; }
    shown.delete(id);
    drawRows();
  }

  function upsert(job) {
    if (noteNodes([job])) { render(); }
    const i = state.jobs.findIndex((j) => j.id === job.id);
    if (i >= 0) {
      if (!matches(job)) state.jobs.splice(i, 1); else state.jobs[i] = job;
    } else if (matches(job) && (!state.next || job.id > state.jobs[state.jobs.length - 1].id)) {
      // In its place, newest first: an older job that comes to match (a queued job that starts
      // while a newer one runs, under status=running) belongs below the newer ones. One older
      // than the loaded pages is left to "Load more".
      const at = state.jobs.findIndex((j) => j.id < job.id);
      state.jobs.splice(at < 0 ? state.jobs.length : at, 0, job);
    } else {
      return;
    }
    selectionChanged();  // a selected job may have ended or left the list; a new one is not selected
    if (!state.jobs.length || state.jobs.length === 1) { render(); return; }
    shown.delete(job.id);  // its row is made anew where it is in view
    drawRows();
  }

  // A running job's best point changes with its points, which come without it: its row is read
  // again, at most once a second per job. An answer that left before the job ended is not newer
  // than the job event that said so.
  const refreshers = new Map();
  function refreshSoon(id) {
    if (!refreshers.has(id)) {
      refreshers.set(id, throttle(async () => {
        try {
          const job = await get(`/api/v1/jobs/${id}`);
          const cur = state.jobs.find((j) => j.id === id);
          if (loading === -1 || !cur || (TERMINAL.has(cur.status) && !TERMINAL.has(job.status))) return;
          upsert(job);
        } catch { /* the next points event tries again */ }
      }, 1000));
    }
    refreshers.get(id)();
  }

  // A job a day old shows its date, which no longer changes: its cell is left alone (rewriting
  // thousands of dates, each through toLocaleString, took a long task every ten seconds).
  const ages = setInterval(() => {
    const now = Date.now();
    tbody.querySelectorAll('td[data-created]:not([data-dated])').forEach((td) => {
      td.textContent = age(td.dataset.created);
      if (now - Date.parse(td.dataset.created) >= 86400000) td.dataset.dated = '';
    });
  }, 10000);

  load(false);
  // The fleet's nodes, so that a list whose jobs all ran on one node still names it.
  get('/api/v1/devices').then(({devices}) => {
    if (loading !== -1 && noteNodes([], devices) && state.jobs.length) render();
  }).catch(() => {});
  return {
    onEvent(e) {
      if (e.type === 'job') upsert(e.data);
      else if (e.type === 'job_deleted') remove(e.data.job_id);
      else if (e.type === 'reset') load(false);
      else if (e.type === 'points') {
        const job = state.jobs.find((j) => j.id === e.data.job_id);
        if (!job) return;
        job.progress = {...job.progress, done: e.data.done, total: e.data.total,
                        failed: (job.progress.failed || 0) + e.data.failed};
        const tr = shown.get(job.id);  // a row out of view is drawn with the progress when it comes
        if (tr) tr.children[5].replaceChildren(progressBar(job.progress));
        refreshSoon(job.id);
      }
    },
    unmount() {
      clearInterval(ages);
      loading = -1;
      window.removeEventListener('scroll', onScroll);
      window.removeEventListener('resize', onScroll);
    },
  };
}
