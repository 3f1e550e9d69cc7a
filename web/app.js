// The minimal kernelscan page: devices and jobs, refreshed every two seconds from the API.
'use strict';

const REFRESH_MS = 2000;

function cell(text, className) {
  const td = document.createElement('td');
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function age(iso) {
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return `${Math.round(s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(iso).toLocaleString();
}

function formatUs(us) {
  if (us >= 1000) return `${(us / 1000).toFixed(3)} ms`;
  return `${us.toFixed(2)} µs`;
}

async function getJSON(url) {
  const res = await fetch(url, {headers: {Accept: 'application/json'}});
  const body = await res.json();
  if (!res.ok) throw new Error(body.error ? body.error.message : `HTTP ${res.status}`);
  return body;
}

function renderDevices(devices) {
  const tbody = document.querySelector('#devices tbody');
  tbody.replaceChildren(...devices.map((d) => {
    const tr = document.createElement('tr');
    tr.append(cell(d.index), cell(d.name), cell(d.engine), cell(d.state, `state-${d.state}`),
              cell(d.current_job ?? '—'), cell(d.points_measured));
    return tr;
  }));
}

function renderJobs(jobs) {
  const tbody = document.querySelector('#jobs tbody');
  document.getElementById('empty').hidden = jobs.length > 0;
  tbody.replaceChildren(...jobs.map((j) => {
    const tr = document.createElement('tr');
    tr.dataset.id = j.id;
    const labels = Object.entries(j.labels).map(([k, v]) => `${k}=${v}`).join(' ');
    const pct = j.progress.total ? Math.floor(100 * j.progress.done / j.progress.total) : 0;
    const progress = cell(`${j.progress.done}/${j.progress.total} (${pct}%)` +
                          (j.progress.failed ? `, ${j.progress.failed} failed` : ''));
    const best = j.summary.best ? formatUs(j.summary.best.median_us) : '—';
    const status = cell(j.status, `status-${j.status}`);
    if (j.error) status.title = j.error.message;
    tr.append(cell(j.id), cell(j.name), cell(j.op), status, progress, cell(j.device ?? '—'),
              cell(labels), cell(best), cell(age(j.created_at)));
    return tr;
  }));
}

async function refresh() {
  const error = document.getElementById('error');
  try {
    const [devices, jobs] = await Promise.all([getJSON('/api/v1/devices'),
                                               getJSON('/api/v1/jobs?limit=100')]);
    renderDevices(devices.devices);
    renderJobs(jobs.jobs);
    error.hidden = true;
    document.getElementById('updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    error.textContent = `Cannot reach the daemon: ${e.message}`;
    error.hidden = false;
  }
}

refresh();
setInterval(refresh, REFRESH_MS);
