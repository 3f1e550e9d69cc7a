// One evaluation task as the caller may see it (an agent: the held-out points' count, not their
// sizes; its own submissions used and remaining under the task's bound), and its leaderboard:
// the task's jobs ranked by their combined score, updated live as jobs are submitted and end.

import {get} from './api.js';
import {age, emptyState, errorBox, h, labelChips, sig, statusBadge, userText} from './dom.js';
import {boundText} from './view_tasks.js';

const PAGE = 200;
const MAX_JOBS = 1000;  // the leaderboard reads at most this many of the task's jobs, newest first
const ACTIVE = new Set(['queued', 'running']);

// Where a job stands on the leaderboard: 0 ranked by its score; 1 its score withheld until an
// operator confirms it (it reads 0 meanwhile, which is not its score); 2 not ended yet; 3 failed
// or cancelled (a job that did not succeed scores 0 by definition).
function standing(job) {
  const f = job.summary && job.summary.fitness;
  if (job.status === 'succeeded') return f && f.withheld ? 1 : 0;
  return ACTIVE.has(job.status) ? 2 : 3;
}

function score(job) {
  const f = job.summary && job.summary.fitness;
  return f && Number.isFinite(f.combined_score) ? f.combined_score : 0;
}

// Ranked jobs by score, highest first (ties: the earlier submission first), then the withheld,
// the unfinished and the failed ones, each group newest first. Ranks are shared by equal scores.
export function rank(jobs) {
  const sorted = [...jobs].sort((a, b) => standing(a) - standing(b) ||
    (standing(a) === 0 ? score(b) - score(a) || a.id - b.id : b.id - a.id));
  let last = null;
  return sorted.map((job, i) => {
    if (standing(job) !== 0) return {job, rank: null};
    if (!last || score(job) !== last.score) last = {score: score(job), rank: i + 1};
    return {job, rank: last.rank};
  });
}

// A sweep or held-out set as "N: 4096, 8192; K: 64" (a long list shortened, a range as given).
function sizesText(sweep) {
  const parts = Object.entries(sweep || {}).map(([k, v]) => {
    if (!Array.isArray(v)) return `${k}: ${JSON.stringify(v)}`;
    const shown = v.length > 12 ? [...v.slice(0, 10), '…', v[v.length - 1]] : v;
    return `${k}: ${shown.join(', ')}`;
  });
  return parts.length ? parts.join('; ') : 'none';
}

// A built-in kernel of the task (its reference, its baseline) in words, "gemm f32 (m=N, n=M,
// k=K, a=a, b=b, c=c)", the spec itself in the title; a custom one by its entry.
function kernelSpec(k) {
  if (k.op === 'custom') return h('span', {title: JSON.stringify(k)}, `the task's kernel `, h('code', {}, k.entry ?? '?'));
  const name = [k.op, k.variant, k.dtype].filter((v) => v !== undefined).join(' ');
  const shape = ['m', 'n', 'k'];  // the sizes first, then the rest as the daemon gave them
  const order = ([key]) => (shape.includes(key) ? shape.indexOf(key) : shape.length);
  const rest = Object.entries(k).filter(([key]) => !['op', 'variant', 'dtype'].includes(key))
    .sort((x, y) => order(x) - order(y))
    .map(([key, v]) => `${key}=${typeof v === 'object' ? JSON.stringify(v) : v}`);
  return h('span', {title: JSON.stringify(k)}, name, rest.length ? h('span', {class: 'muted'}, ` (${rest.join(', ')})`) : '');
}

function plural(n, word) { return `${n} ${word}${n === 1 ? '' : 's'}`; }

function launchText(v) {
  return Array.isArray(v) ? `[${v.join(', ')}]` : v === undefined || v === null ? '—' : String(v);
}

export function mount(root, {name}) {
  const state = {task: null, jobs: [], capped: false, loaded: false};
  let live = true;
  const head = h('div', {class: 'task-head'}, h('p', {class: 'muted'}, `Loading task ${name}…`));
  const message = h('div');
  const board = h('section', {class: 'leaderboard'});
  root.append(head, message, board);

  function renderHead() {
    const t = state.task;
    const k = t.kernel || {};
    const s = t.submissions;
    const v = t.verify || {};
    const f = t.fitness || {};
    const heldOut = t.held_out
      ? [plural(t.held_out_points, 'point'), ': ', h('span', {id: 'task-held-out-sizes'}, sizesText(t.held_out)),
         h('span', {class: 'muted'}, ' (shown to operators only)')]
      : [plural(t.held_out_points, 'point'), h('span', {class: 'muted'}, t.held_out_points ? ', its sizes not shown' : '')];
    // Private held-out scores: an agent's scores, and this leaderboard as it reads it, count the
    // public points alone.
    if (t.held_out_scores === 'private') {
      heldOut.push(h('span', {id: 'task-held-out-scores'},
        '; their scores are private: an agent sees its score over the public points alone'));
    }
    const args = h('table', {class: 'data narrow', id: 'task-args'},
      h('thead', {}, h('tr', {}, h('th', {}, 'argument'), h('th', {}, 'type'), h('th', {}, 'count / value'), h('th', {}, 'output'))),
      h('tbody', {}, (k.args || []).map((a) => h('tr', {},
        h('td', {}, h('code', {}, a.name)), h('td', {}, h('code', {}, a.type)),
        h('td', {}, h('code', {}, a.count !== undefined ? String(a.count) : a.value !== undefined ? String(a.value) : '—')),
        h('td', {}, a.output ? 'output' : '')))));
    const facts = h('dl', {class: 'facts', id: 'task-facts'},
      t.status === 'retired' ? [h('dt', {}, 'retired'), h('dd', {class: 'warn', id: 'task-retired'},
        `${t.retired_at ? new Date(t.retired_at).toLocaleString() : ''}: it takes no new submissions; its jobs stay readable`)] : '',
      h('dt', {}, 'language'), h('dd', {}, k.language || '—'),
      h('dt', {}, 'entry'), h('dd', {}, h('code', {}, k.entry || '—')),
      h('dt', {title: 'defaults a submission may override'}, 'launch'), h('dd', {id: 'task-launch'},
        `block ${launchText(k.block)}, grid ${launchText(k.grid)}`,
        k.shared_bytes ? `, ${k.shared_bytes} bytes shared` : '',
        Array.isArray(k.compile_options) && k.compile_options.length ? `, options ${k.compile_options.join(' ')}` : '',
        h('span', {class: 'muted'}, ' (defaults a submission may override)')),
      h('dt', {}, 'dtypes'), h('dd', {}, (t.dtypes || []).join(', ') || '—'),
      h('dt', {}, 'work'), h('dd', {}, `flops ${k.flops ?? '—'}, bytes ${k.bytes ?? '—'}`),
      k.reference ? [h('dt', {}, 'reference'), h('dd', {id: 'task-reference'}, kernelSpec(k.reference))] : '',
      h('dt', {}, 'public sweep'), h('dd', {id: 'task-sweep'}, `${sizesText(t.sweep)} (${plural(t.public_points, 'point')})`),
      h('dt', {title: 'sizes every submission is also measured and scored at'}, 'held out'), h('dd', {id: 'task-held-out'}, heldOut),
      h('dt', {}, 'verify'), h('dd', {id: 'task-verify'},
        `${plural(v.trials, 'trial')}, atol ${v.atol ?? 'default'}, rtol ${v.rtol ?? 'default'}`),
      h('dt', {}, 'fitness'), h('dd', {id: 'task-fitness'},
        `target ${Number.isFinite(f.target_us) ? `${f.target_us} µs` : 'none'}, baseline `,
        f.baseline ? kernelSpec(f.baseline) : 'none',
        Number.isFinite(f.correctness_weight) ? `, correctness weight ${f.correctness_weight}` : ''),
      h('dt', {}, 'placement'), h('dd', {}, `engine ${t.engine}, device ${typeof t.device === 'object' ? JSON.stringify(t.device) : t.device}`),
      h('dt', {}, 'submissions'), h('dd', {id: 'task-bound'}, boundText(s),
        s && Number.isInteger(s.used) ? h('span', {id: 'task-used'}, `: you used ${s.used}, ${s.remaining} remaining`) : ''),
      h('dt', {}, 'created'), h('dd', {title: t.created_at}, new Date(t.created_at).toLocaleString()));
    head.replaceChildren(
      h('div', {class: 'title-row'}, h('h2', {}, 'Task ', userText(t.name)), statusBadge(t.status),
        h('span', {class: 'spacer'}), h('a', {class: 'button ghost', href: '#/tasks'}, 'All tasks')),
      t.description ? h('p', {class: 'task-description', id: 'task-description'}, userText(t.description)) : '',
      facts,
      h('h3', {}, 'Arguments'), args);
  }

  function row({job, rank: r}) {
    const f = job.summary && job.summary.fitness;
    const labels = {...(job.labels || {})};
    delete labels.task;  // every job here has it
    const where = standing(job);
    const scoreCell = where === 0
      ? h('td', {class: 'num score', title: String(score(job))}, sig(score(job), 5), f && f.confirmed ? h('span', {class: 'muted', title: 'confirmed by an operator'}, ' ✓') : '')
      : where === 1
      ? h('td', {class: 'num score'}, h('span', {class: 'badge status-queued', title: 'an excessive speedup: scored 0 until an operator confirms it'}, 'withheld'))
      : h('td', {class: 'num score muted'}, '—');
    return h('tr', {dataset: {id: job.id}, class: where === 3 ? 'failed-row' : undefined},
             h('td', {class: 'num rank'}, r === null ? '' : String(r)),
             h('td', {}, h('a', {href: `#/jobs/${job.id}`}, `#${job.id}`)),
             h('td', {class: 'name', title: job.name}, h('a', {href: `#/jobs/${job.id}`}, userText(job.name))),
             h('td', {}, labelChips(labels)),
             h('td', {}, statusBadge(job.status, job.error ? `${job.error.type}: ${job.error.message}` : undefined)),
             scoreCell,
             h('td', {class: 'num'}, f ? `${f.correct_points} of ${f.points}` : '—'),
             h('td', {class: 'num'}, f && Number.isFinite(f.speedup) ? `${sig(f.speedup, 3)}×` : '—'),
             h('td', {}, f && f.flags && f.flags.length ? f.flags.map((x) => h('span', {class: 'chip flag'}, x)) : ''),
             h('td', {title: job.created_at, dataset: {created: job.created_at}}, age(job.created_at)));
  }

  function renderBoard() {
    // Where the held-out scores are private, a reader without an operator token (who is not
    // given the held-out sizes either) ranks by the public points' score.
    const t = state.task || {};
    const publicOnly = t.held_out_scores === 'private' && !t.held_out;
    const heading = h('h3', {}, 'Leaderboard ',
      h('span', {class: 'muted', id: 'leaderboard-basis'}, publicOnly
        ? 'ranked by combined score over the public points (the held-out scores are private: an operator\'s board counts them too)'
        : 'ranked by combined score (the geometric mean over every point, held-out ones included)'));
    if (!state.jobs.length) {
      board.replaceChildren(heading, emptyState('No submissions yet.',
        h('p', {}, 'An agent submits a candidate with ', h('code', {}, `POST /api/v1/tasks/${name}/submissions`), ':'),
        h('pre', {}, `curl -X POST ${location.origin}/api/v1/tasks/${encodeURIComponent(name)}/submissions -d @candidate.json`)));
      return;
    }
    const ranked = rank(state.jobs);
    const n = ranked.filter((x) => x.rank !== null).length;
    board.replaceChildren(heading,
      h('p', {class: 'muted', id: 'leaderboard-count'},
        `${plural(state.jobs.length, 'job')}, ${n} ranked`,
        state.capped ? `; only the newest ${MAX_JOBS} of this task's jobs are read, older ones are not on this board` : ''),
      h('table', {class: 'data', id: 'leaderboard'},
        h('thead', {}, h('tr', {},
          h('th', {class: 'num'}, 'rank'), h('th', {}, 'job'), h('th', {}, 'name'), h('th', {}, 'labels'), h('th', {}, 'status'),
          h('th', {class: 'num', title: 'summary.fitness.combined_score: 0 where any point failed, was wrong or flagged'}, 'combined score'),
          h('th', {class: 'num'}, 'correct points'),
          h('th', {class: 'num', title: 'geometric mean of the speedups over the task\'s baseline'}, 'speedup'),
          h('th', {}, 'flags'), h('th', {}, 'submitted'))),
        h('tbody', {}, ranked.map(row))));
  }

  async function loadJobs() {
    let jobs = [], cursor = null;
    do {
      const p = new URLSearchParams({task: name, limit: String(PAGE)});
      if (cursor) p.set('cursor', cursor);
      const page = await get(`/api/v1/jobs?${p}`);
      jobs = jobs.concat(page.jobs);
      cursor = page.next_cursor;
    } while (cursor && jobs.length < MAX_JOBS);
    // A full last page comes with a cursor whether or not older jobs remain: ask for one.
    const capped = !!cursor && (await get(`/api/v1/jobs?${new URLSearchParams({task: name, limit: '1', cursor})}`)).jobs.length > 0;
    return {jobs, capped};
  }

  async function load() {
    try {
      const jobsPromise = loadJobs();
      jobsPromise.catch(() => {});
      state.task = await get(`/api/v1/tasks/${encodeURIComponent(name)}`);
      if (!live) return;
      renderHead();
      const {jobs, capped} = await jobsPromise;
      if (!live) return;
      // Job events that came while the pages were read are newer than them.
      const seen = new Map(state.jobs.map((j) => [j.id, j]));
      state.jobs = jobs.map((j) => seen.get(j.id) || j).concat(state.jobs.filter((j) => !jobs.some((x) => x.id === j.id)));
      state.capped = capped;
      state.loaded = true;
      message.replaceChildren();
      renderBoard();
    } catch (e) {
      if (!live) return;
      if (e.status === 404) {
        head.replaceChildren(h('h2', {}, `Task ${name}`));
        board.remove();
        message.replaceChildren(errorBox({type: 'not_found', message: `There is no task ${name}.`}),
                                h('p', {}, h('a', {href: '#/tasks'}, 'All tasks')));
      } else {
        message.replaceChildren(errorBox(e));
      }
    }
  }

  const ages = setInterval(() => {
    board.querySelectorAll('td[data-created]').forEach((td) => { td.textContent = age(td.dataset.created); });
  }, 10000);

  load();
  return {
    onEvent(e) {
      // Events missed, or this task retired (on any node): read it again.
      if (e.type === 'reset' || (e.type === 'task' && e.data.name === name)) { load(); return; }
      if (e.type === 'job_deleted') {
        const before = state.jobs.length;
        state.jobs = state.jobs.filter((j) => j.id !== e.data.job_id);
        if (state.loaded && state.jobs.length !== before) renderBoard();
        return;
      }
      if (e.type !== 'job' || e.data.task !== name) return;
      const i = state.jobs.findIndex((j) => j.id === e.data.id);
      if (i >= 0) state.jobs[i] = e.data; else state.jobs.push(e.data);
      if (state.loaded) renderBoard();
    },
    unmount() { clearInterval(ages); live = false; },
  };
}
