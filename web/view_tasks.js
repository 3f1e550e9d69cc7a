// Tasks: the daemon's evaluation tasks, each with its status, description, dtypes, how many public
// and held-out points every submission is measured at, and the bound on each agent's submissions.

import {get} from './api.js';
import {age, emptyState, errorBox, h, statusBadge, userText} from './dom.js';

// A task's description on one line of the table: its first line, cut at `max` characters (the
// whole of it is the cell's title).
export function oneLine(text, max = 90) {
  const first = String(text || '').split('\n')[0].trim();
  return first.length > max ? `${first.slice(0, max - 1).trimEnd()}…` : first;
}

// The bound on each agent's submissions in words: "100 per agent per 24 h", "5 per agent", "none".
// The task's bound on each agent's submissions, as the CLI words it: "20 per agent per 24 h",
// "5 per agent over the task's life", or "not bounded".
export function boundText(s) {
  if (!s || !Number.isFinite(s.per_agent)) return 'not bounded';
  const per = Number.isFinite(s.window_hours) ? ` per ${s.window_hours} h` : ' over the task\'s life';
  return `${s.per_agent} per agent${per}`;
}

export function mount(root) {
  const message = h('div');
  const tbody = h('tbody');
  const table = h('table', {id: 'tasks-table', class: 'data', hidden: true},
                  h('thead', {}, h('tr', {},
                    h('th', {}, 'name'), h('th', {}, 'status'), h('th', {}, 'description'), h('th', {}, 'dtypes'),
                    h('th', {class: 'num', title: 'the sizes every submission is measured at that its author sees'}, 'public points'),
                    h('th', {class: 'num', title: 'sizes every submission is also measured and scored at, which agents never see'}, 'held-out points'),
                    h('th', {title: 'how many submissions the task takes from each agent (an operator is not bounded)'}, 'submissions'),
                    h('th', {}, 'created'))),
                  tbody);
  root.append(h('div', {class: 'view-head'}, h('h2', {}, 'Tasks')), message, table);
  let live = true;

  function row(t) {
    const href = `#/tasks/${encodeURIComponent(t.name)}`;
    return h('tr', {dataset: {name: t.name}},
             h('td', {class: 'task-name'}, h('a', {href, title: t.name}, userText(t.name))),
             h('td', {}, statusBadge(t.status, t.retired_at ? `retired ${new Date(t.retired_at).toLocaleString()}` : undefined)),
             h('td', {class: 'description', title: t.description || undefined}, oneLine(t.description)),
             h('td', {}, (t.dtypes || []).join(', ')),
             h('td', {class: 'num'}, String(t.public_points)),
             h('td', {class: 'num'}, String(t.held_out_points)),
             h('td', {class: 'bound'}, boundText(t.submissions)),
             h('td', {title: t.created_at}, age(t.created_at)));
  }

  async function load() {
    try {
      const {tasks} = await get('/api/v1/tasks');
      if (!live) return;
      if (!tasks.length) {
        table.hidden = true;
        message.replaceChildren(emptyState('No tasks yet.',
          h('p', {}, 'An operator defines one with ', h('code', {}, 'POST /api/v1/tasks'),
            '; agents then submit candidates against it:'),
          h('pre', {}, `curl -X POST ${location.origin}/api/v1/tasks -d @task.json`)));
        return;
      }
      message.replaceChildren();
      table.hidden = false;
      // Active tasks first, each group newest first.
      const sorted = [...tasks].sort((a, b) => (a.status === 'retired') - (b.status === 'retired') ||
                                               Date.parse(b.created_at) - Date.parse(a.created_at));
      tbody.replaceChildren(...sorted.map(row));
    } catch (e) {
      if (live) message.replaceChildren(errorBox(e));
    }
  }

  load();
  return {
    // A task defined or retired (on any node), or events missed: the list is read again.
    onEvent(e) { if (e.type === 'task' || e.type === 'reset') load(); },
    unmount() { live = false; },
  };
}
