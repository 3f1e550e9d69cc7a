// Submit: start from a template (GEMM sweep, stream, custom kernel) made for the daemon's
// devices, or from a job to run again (#/submit?from=ID: its spec, measured afresh), adjust the
// spec, post it.
// Errors from the API are shown with every field they name; a created job opens its page. In a
// fleet the device picker offers every node's devices (placement {"node", "index"}) and "any
// device of" each node.

import {get, post} from './api.js';
import {errorBox, h} from './dom.js';
import {deviceLabel, nodesOf} from './fleet.js';

const MATMUL = `extern "C" __global__ void matmul(const float* a, const float* b, float* c,
                                  int M, int N, int K) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += a[row * K + k] * b[k * N + col];
  c[row * N + col] = acc;
}
`;

const MATMUL_CL = `__kernel void matmul(__global const float* a, __global const float* b,
                     __global float* c, int M, int N, int K) {
  int row = get_global_id(1);
  int col = get_global_id(0);
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += a[row * K + k] * b[k * N + col];
  c[row * N + col] = acc;
}
`;

// The templates, written for the daemon's live `devices` (none known yet: GPUs). Where every
// device is an OpenCL one, the custom kernel is OpenCL C (a HIP kernel would be refused); where
// every one is a CPU, the sizes are a CPU's (seconds, not hours, for a 2-core machine) and the
// GEMM is f32, which every OpenCL device and its library have.
export function templatesFor(devices = []) {
  const live = devices.filter((d) => d.state !== 'offline');
  const cpus = live.length > 0 && live.every((d) => d.type === 'cpu');
  const opencl = live.length > 0 && live.every((d) => d.engine === 'opencl');
  // The GEMM a live device runs: f16 where some device's library has it (a CPU gets f32 anyway,
  // sized for it), else f32; the built-in GEMM where no device has a library for it.
  const libraryRuns = (t) => live.some((d) => !d.capabilities || d.capabilities.gemm_library_dtypes.includes(t));
  const dtype = !cpus && (live.length === 0 || libraryRuns('f16')) ? 'f16' : 'f32';
  const impl = live.length === 0 || libraryRuns(dtype) ? 'library' : 'builtin';
  return {
    gemm: {
      label: 'GEMM sweep',
      spec: {
        name: `${dtype} gemm sweep`,
        kernel: {op: 'gemm', m: 'M', n: 'N', k: 'K', dtype, layout_a: 'row', layout_b: 'col', impl},
        sweep: cpus ? {M: {from: 64, to: 512, mul: 2}, N: {from: 64, to: 512, mul: 2}, K: [256]}
                    : {M: {from: 512, to: 8192, mul: 2}, N: {from: 512, to: 8192, mul: 2}, K: [4096]},
        timing: {l2: 'cold', min_samples: 10, max_time_ms: 2000, target_rel_noise: 0.005},
      },
    },
    stream: {
      label: 'Stream (bandwidth)',
      spec: {
        name: 'stream triad',
        kernel: {op: 'stream', variant: 'triad', n: 'N', dtype: 'f32'},
        sweep: {N: cpus ? {from: 65536, to: 16777216, mul: 2} : {from: 1048576, to: 268435456, mul: 2}},
        timing: {l2: 'cold'},
      },
    },
    custom: {
      label: 'Custom kernel',
      spec: {
        name: 'naive matmul',
        kernel: {
          op: 'custom', language: opencl ? 'opencl' : 'hip', source: opencl ? MATMUL_CL : MATMUL, entry: 'matmul',
          block: [16, 16, 1], grid: ['ceil(N/16)', 'ceil(M/16)', 1],
          args: [
            {name: 'a', type: 'f32*', count: 'M*K', init: 'random'},
            {name: 'b', type: 'f32*', count: 'K*N', init: 'random'},
            {name: 'c', type: 'f32*', count: 'M*N', output: true},
            {name: 'M', type: 'i32', value: 'M'},
            {name: 'N', type: 'i32', value: 'N'},
            {name: 'K', type: 'i32', value: 'K'},
          ],
          flops: '2*M*N*K', bytes: '4*(M*K + K*N + M*N)',
          reference: {op: 'gemm', m: 'M', n: 'N', k: 'K', dtype: 'f32', a: 'a', b: 'b', c: 'c'},
        },
        sweep: cpus ? {M: [64, 128, 256], N: [64, 128, 256], K: [128]} : {M: [256, 512, 1024], N: [256, 512, 1024], K: [512]},
        verify: {trials: 1},
      },
    },
  };
}

export function mount(root, {query} = {}) {
  let disposed = false;
  // A job to run again: its id, as the job view links it.
  const from = query && /^\d{1,19}$/.test(query.get('from') || '') ? query.get('from') : null;
  let prefilled = false;  // the form holds that job's spec: no template replaces it
  let templates = templatesFor();
  const template = h('select', {id: 'submit-template', 'aria-label': 'template'},
                     Object.entries(templates).map(([k, t]) => h('option', {value: k}, t.label)));
  const name = h('input', {id: 'submit-name', size: 30});
  const labels = h('input', {id: 'submit-labels', placeholder: 'team=perf, candidate=17', size: 30});
  const priority = h('input', {id: 'submit-priority', type: 'number', min: -1000, max: 1000, value: '0', style: 'width:6em'});
  const device = h('select', {id: 'submit-device', 'aria-label': 'device'}, h('option', {value: 'any'}, 'any device'));
  const spec = h('textarea', {id: 'submit-spec', rows: 24, spellcheck: 'false', 'aria-label': 'job spec (JSON)'});
  const key = h('input', {id: 'submit-key', size: 24, placeholder: 'optional; makes retries safe'});
  const message = h('div', {id: 'submit-message'});
  const button = h('button', {type: 'submit', id: 'submit-button'}, 'Submit job');

  let filled = {name: '', spec: ''};  // what fill() last wrote: a form still holding it is untouched
  function fill() {
    const t = templates[template.value];
    name.value = t.spec.name;
    const {name: _n, ...rest} = t.spec;
    spec.value = JSON.stringify(rest, null, 2);
    filled = {name: name.value, spec: spec.value};
    message.replaceChildren();
  }
  template.addEventListener('change', fill);

  function build() {
    let body;
    try {
      body = JSON.parse(spec.value);
    } catch (e) {
      throw {type: 'invalid_json', message: `The spec is not valid JSON: ${e.message}`};
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw {type: 'invalid_json', message: 'The spec must be a JSON object.'};
    }
    if (name.value.trim()) body.name = name.value.trim();
    const pairs = labels.value.split(',').map((s) => s.trim()).filter(Boolean);
    if (pairs.length) {
      // Without a prototype, so that a label named __proto__ (or constructor) is a label like any other.
      body.labels = Object.assign(Object.create(null), body.labels || {});
      for (const p of pairs) {
        const i = p.indexOf('=');
        if (i <= 0) throw {type: 'invalid_labels', message: `label "${p}" is not KEY=VALUE`};
        body.labels[p.slice(0, i)] = p.slice(i + 1);
      }
    }
    if (priority.value !== '' && Number(priority.value) !== 0) body.priority = Number(priority.value);
    // A fleet's placements are JSON ({"node": ..., "index": ...}); a daemon alone takes an index.
    if (device.value !== 'any') body.device = device.value.startsWith('{') ? JSON.parse(device.value) : Number(device.value);
    return body;
  }

  const form = h('form', {class: 'submit-form', id: 'submit-form', onsubmit: async (ev) => {
    ev.preventDefault();
    let body;
    try {
      body = build();
    } catch (e) {
      message.replaceChildren(errorBox(e));
      return;
    }
    button.disabled = true;
    try {
      const extra = key.value.trim() ? {'Idempotency-Key': key.value.trim()} : {};
      const job = await post('/api/v1/jobs', body, extra);
      if (!disposed) location.hash = `#/jobs/${job.id}`;
    } catch (e) {
      message.replaceChildren(errorBox(e));
    } finally {
      button.disabled = false;
    }
  }},
  h('div', {class: 'row'}, h('label', {}, 'Template ', template), h('label', {}, 'Name ', name),
    h('label', {}, 'Labels ', labels)),
  h('div', {class: 'row'}, h('label', {}, 'Priority ', priority), h('label', {}, 'Device ', device),
    h('label', {}, 'Idempotency-Key ', key)),
  h('label', {class: 'block'}, 'Spec (JSON: kernel, sweep, timing, verify, …; see ',
    h('a', {href: '/api/v1/openapi.yaml'}, 'the API contract'), ')', spec),
  message,
  h('div', {class: 'row'}, button));
  const title = h('h2', {}, from ? `Run job ${from} again` : 'Submit a job');
  root.append(h('div', {class: 'view-head'}, title), form);
  fill();
  if (from) {
    get(`/api/v1/jobs/${from}`).then((job) => {
      if (disposed) return;
      if (job.engine === 'import') throw {type: 'not_runnable', message: `Job ${from} was imported (measured elsewhere): there is nothing to run again.`};
      if (job.task) throw {type: 'not_runnable', message: `Job ${from} is a candidate of task ${job.task}: submit it to the task again.`};
      // Measured afresh: not answered with the rows it has, and with inputs of a new seed.
      const {name: jobName, seed: _seed, ...rest} = job.spec;
      rest.cache = false;
      name.value = jobName;
      spec.value = JSON.stringify(rest, null, 2);
      prefilled = true;
      form.dataset.prefilled = from;
      message.replaceChildren(h('div', {class: 'note-box', id: 'submit-from'},
        `Job ${from}'s spec, to be measured afresh: "cache" is false and the daemon draws a new seed.`));
    }).catch((e) => { if (!disposed) message.replaceChildren(errorBox(e)); });
  }
  get('/api/v1/devices').then(({devices}) => {
    if (disposed) return;
    // The templates for these devices, in the form unless someone has already changed it.
    templates = templatesFor(devices);
    if (!prefilled && name.value === filled.name && spec.value === filled.spec) fill();
    form.dataset.devicesReady = '1';
    const nodes = [...nodesOf(devices)];
    if (nodes.length <= 1) {
      for (const d of devices) device.append(h('option', {value: String(d.index)}, `${d.index}: ${d.name}`));
      return;
    }
    for (const node of nodes) {
      const own = devices.filter((d) => d.node === node);
      const offline = own.every((d) => d.state === 'offline');
      device.append(h('optgroup', {label: `node ${node}${offline ? ' (offline)' : ''}`},
        h('option', {value: JSON.stringify({node}), disabled: offline}, `any device of ${node}`),
        own.map((d) => h('option', {value: JSON.stringify({node, index: d.index}), disabled: d.state === 'offline'},
                         `${deviceLabel(node, d.index, true)}: ${d.name}`))));
    }
  }).catch(() => {});
  return {onEvent() {}, unmount() { disposed = true; }};
}
