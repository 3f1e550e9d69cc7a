// The dashboard: a hash router over seven views (jobs, job, tasks, task, compare, devices, submit), the live
// event stream they share, and the token form. Views are modules exporting
// mount(root, params) -> {onEvent(event), unmount()}.

import {EventStream, onUnauthorized, setToken, token} from './api.js';
import * as compareView from './view_compare.js';
import * as devicesView from './view_devices.js';
import * as jobView from './view_job.js';
import * as jobsView from './view_jobs.js';
import * as submitView from './view_submit.js';
import * as taskView from './view_task.js';
import * as tasksView from './view_tasks.js';
import {splitHash} from './dom.js';

const ROUTES = [
  // A job's id is a digit string, kept as one (a Number would turn 99999999999999999999999 into
  // 1e+23): leading zeros go, and the job view says that one past 2^63 - 1 is no job.
  {pattern: /^#\/jobs\/(\d+)$/, view: jobView, nav: 'jobs', args: (m) => ({id: m[1].replace(/^0+(?=\d)/, '')})},
  // A task's name is [A-Za-z0-9_.-]{1,64}: nothing in it needs decoding.
  {pattern: /^#\/tasks\/([A-Za-z0-9_.-]{1,64})$/, view: taskView, nav: 'tasks', args: (m) => ({name: m[1]})},
  {pattern: /^#\/tasks$/, view: tasksView, nav: 'tasks', args: () => ({})},
  {pattern: /^#\/compare$/, view: compareView, nav: 'compare', args: () => ({})},
  {pattern: /^#\/devices$/, view: devicesView, nav: 'devices', args: () => ({})},
  {pattern: /^#\/submit$/, view: submitView, nav: 'submit', args: () => ({})},
  {pattern: /^(#\/jobs|#\/?|)$/, view: jobsView, nav: 'jobs', args: () => ({})},
];

let current = null;

function route() {
  const [path, query] = splitHash();
  const root = document.getElementById('view');
  const found = ROUTES.find((r) => r.pattern.test(path));
  if (current) {
    try { current.unmount(); } catch (e) { console.warn('unmount', e); }
    current = null;
  }
  root.replaceChildren();
  delete root.dataset.chartsReady;  // each view sets it again once its charts are drawn
  document.querySelectorAll('header nav a').forEach((a) => {
    a.classList.toggle('active', !!found && a.dataset.view === found.nav);
  });
  if (!found) {
    const p = document.createElement('p');
    p.className = 'error-box';
    p.textContent = `No page ${path}. `;
    const back = document.createElement('a');
    back.href = '#/jobs';
    back.textContent = 'Go to the jobs';
    p.append(back);
    root.append(p);
    return;
  }
  current = found.view.mount(root, {...found.args(path.match(found.pattern)), query});
}

function liveState(state, detail) {
  const el = document.getElementById('live');
  el.className = `live ${state}`;
  el.textContent = state === 'live' ? 'live' : state === 'connecting' ? 'connecting' : 'offline';
  el.title = state === 'offline' ? `live updates paused: ${detail || ''}; retrying` : 'live updates from the daemon';
}

function onEvent(e) {
  if (current && current.onEvent) current.onEvent(e);
}

function setupToken() {
  const panel = document.getElementById('token-panel');
  const input = document.getElementById('token-input');
  const button = document.getElementById('token-button');
  const show = () => { panel.hidden = false; input.value = token(); input.focus(); };
  button.classList.toggle('set', !!token());
  button.addEventListener('click', () => { panel.hidden ? show() : (panel.hidden = true); });
  document.getElementById('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    setToken(input.value.trim());
    location.reload();
  });
  document.getElementById('token-clear').addEventListener('click', () => {
    setToken('');
    location.reload();
  });
  onUnauthorized(show);
}

setupToken();
const stream = new EventStream(onEvent, liveState);
window.addEventListener('hashchange', route);
route();
stream.start();
// For tests and the curious: the live state and the event count.
window.kernelscan = {stream};
