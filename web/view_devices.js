// Devices: each device with its state (busy with which job, or idle), its description, its
// datasheet peaks and measured roofline when it has one, and its ceilings as a roofline chart.
// In a fleet the devices are grouped by node, each group headed by its node's name and heartbeat
// (offline once the node stopped or went quiet); a daemon alone names its node once.

import {get, post} from './api.js';
import {deviceRooflineOption, hasPeaks, measuredWord} from './charts.js';
import {age, emptyState, errorBox, fmtBytes, h, sig, throttle, whenECharts} from './dom.js';
import {deviceLabel, nodesOf} from './fleet.js';

// What a block may have and what a compute unit holds, as the platform told them (null where it
// told nothing: the mock; OpenCL's compute units).
function limitsFacts(l) {
  if (!l) return '';
  const block = [l.block_threads && `${l.block_threads} threads`,
                 l.block_shared_bytes && `${fmtBytes(l.block_shared_bytes)} shared memory`].filter(Boolean);
  const unit = [l.unit_threads && `${l.unit_threads} threads`, l.unit_registers && `${l.unit_registers} registers`,
                l.unit_shared_bytes && `${fmtBytes(l.unit_shared_bytes)} shared memory`,
                l.warp_size && `warps of ${l.warp_size}`].filter(Boolean);
  return [block.length ? [h('dt', {}, 'a block at most'), h('dd', {class: 'limits-block'}, block.join(', '))] : '',
          unit.length ? [h('dt', {}, 'a unit holds'), h('dd', {class: 'limits-unit'}, unit.join(', '))] : ''];
}

// [field, label, unit, what it is (the row's title)]. f32 is the best f32 rate: matrix cores on
// AMD, CUDA cores on NVIDIA (no TF32), measured by a GEMM (on a CPU device, its GEMM kernel's);
// the vector units' is the FMA kernel's. "matrix" named it for AMD alone.
const PEAKS = [['f64_tflops', 'f64', 'TFLOP/s', 'f64 GEMM'],
               ['f32_tflops', 'f32', 'TFLOP/s', 'the best f32 rate: matrix cores on AMD, CUDA cores on NVIDIA (no TF32); measured by an f32 GEMM'],
               ['vector_f32_tflops', 'f32 (vector units)', 'TFLOP/s', 'f32 FMA on the vector units, without matrix cores'],
               ['f16_tflops', 'f16', 'TFLOP/s', 'f16 GEMM'], ['bf16_tflops', 'bf16', 'TFLOP/s', 'bf16 GEMM'],
               ['i8_tops', 'int8', 'TOP/s', 'int8 GEMM'], ['bandwidth_gbps', 'memory bandwidth', 'GB/s', 'measured by a STREAM triad, caches cold']];

export function mount(root) {
  const charts = [];
  let disposed = false;
  const body = h('div', {class: 'devices-body'});
  const where = h('span', {class: 'muted', id: 'devices-node'});
  const message = h('div', {id: 'devices-message'});
  root.append(h('div', {class: 'view-head'}, h('h2', {}, 'Devices ', where)), message, body);
  // Devices asked to measure their roofline again, by node/index: the measured_at they had.
  // Each shows as measuring until the device has a new one (or its measurement failed): the
  // device's events (GET /api/v1/events) bring the view up to date as it measures.
  const asked = new Map();
  const keyOf = (d) => `${d.node}/${d.index}`;
  const measuredAt = (d) => (d.measured && d.measured.measured_at) || null;

  async function measureAgain(d) {
    try {
      asked.set(keyOf(d), {at: measuredAt(d), error: d.last_error, since: Date.now()});
      await post(`/api/v1/devices/${d.index}/roofline?node=${encodeURIComponent(d.node)}`, {});
      message.replaceChildren();
      await load();
    } catch (e) {
      asked.delete(keyOf(d));
      message.replaceChildren(errorBox(e));
    }
  }

  // Settles what was asked: a new time, a new error naming the roofline, or ten minutes.
  function settle(devices) {
    for (const d of devices) {
      const a = asked.get(keyOf(d));
      if (!a) continue;
      const fresh = measuredAt(d) !== a.at && d.state !== 'measuring';
      const failed = d.last_error && d.last_error !== a.error && d.last_error.includes('roofline');
      if (fresh || failed || Date.now() - a.since > 600000) asked.delete(keyOf(d));
    }
  }

  function card(d, fleet) {
    const busy = d.state === 'busy' && d.current_job !== null;
    const measuring = asked.has(keyOf(d)) || d.state === 'measuring';
    // A mock device's "measured" roofline is its model's: call it what it is.
    const word = measuredWord(d.measured);
    const peaks = h('table', {class: 'data narrow peaks'},
      h('thead', {}, h('tr', {}, h('th', {}, 'peak'), h('th', {class: 'num'}, 'datasheet'), h('th', {class: 'num'}, word))),
      h('tbody', {}, PEAKS.filter(([k]) => (d.datasheet && d.datasheet[k]) || (d.measured && d.measured[k])).map(([k, label, unit, what]) =>
        h('tr', {dataset: {peak: k}}, h('td', {title: what}, label),
          h('td', {class: 'num'}, d.datasheet && d.datasheet[k] ? `${sig(d.datasheet[k])} ${unit}` : '—'),
          h('td', {class: 'num'}, d.measured && d.measured[k] ? `${sig(d.measured[k])} ${unit}` : '—')))));
    const chartEl = h('div', {class: 'chart small', id: `chart-device-${d.node}-${d.index}`});
    const el = h('section', {class: 'device-card', dataset: {node: d.node, index: d.index}},
      h('div', {class: 'title-row'}, h('h3', {}, `${deviceLabel(d.node, d.index, fleet)}: ${d.name}`),
        h('span', {class: `badge state-${d.state}`}, d.state),
        busy ? h('a', {href: `#/jobs/${d.current_job}`}, `running job #${d.current_job}`) : '',
        d.state === 'offline' ? '' : h('button', {type: 'button', class: 'measure-again',
          disabled: measuring,
          title: 'measure its roofline again, between its jobs (POST /api/v1/devices/{index}/roofline)',
          onclick: () => measureAgain(d)},
        measuring ? 'Measuring…' : 'Measure again')),
      h('dl', {class: 'facts'},
        h('dt', {}, 'engine'), h('dd', {}, d.engine), h('dt', {}, 'vendor'), h('dd', {}, d.vendor),
        h('dt', {}, 'arch'), h('dd', {}, d.arch || '—'), h('dt', {}, 'catalog model'), h('dd', {}, d.model || 'not in the catalog'),
        h('dt', {}, 'compute units'), h('dd', {}, String(d.compute_units || '—')),
        h('dt', {}, 'clock'), h('dd', {}, d.clock_mhz ? `${d.clock_mhz} MHz` : '—'),
        h('dt', {}, 'memory'), h('dd', {}, d.memory_bytes ? fmtBytes(d.memory_bytes) : '—'),
        h('dt', {}, 'L2 / last-level cache'), h('dd', {}, `${fmtBytes(d.l2_bytes)} / ${d.llc_bytes ? fmtBytes(d.llc_bytes) : 'none'}`),
        d.core_caches_bytes ? [h('dt', {}, "cores' caches"), h('dd', {class: 'core-caches'}, `${fmtBytes(d.core_caches_bytes)} (their L2s)`)] : '',
        h('dt', {}, 'driver'), h('dd', {}, d.driver || '—'),
        h('dt', {}, 'roofline measured'), h('dd', {class: 'measured-at', title: measuredAt(d) || ''},
          measuredAt(d) ? age(measuredAt(d)) : 'not yet'),
        d.capabilities ? [
          h('dt', {}, 'arithmetic'), h('dd', {class: 'capabilities-arithmetic'},
            `f64 ${d.capabilities.fp64 ? 'yes' : 'no'}, half ${d.capabilities.fp16 ? 'yes' : 'no'}`),
          h('dt', {}, 'GEMM library'), h('dd', {class: 'capabilities-library'}, d.capabilities.gemm_library
            ? `${d.capabilities.gemm_library}: ${d.capabilities.gemm_library_dtypes.join(', ') || 'no type'}` : 'none in this build'),
          h('dt', {}, 'built-in GEMM'), h('dd', {}, d.capabilities.gemm_builtin_dtypes.join(', ') || 'none')] : '',
        limitsFacts(d.limits),
        h('dt', {}, 'worker'), h('dd', {}, d.worker_pid ? `pid ${d.worker_pid}, ${d.worker_restarts} restart${d.worker_restarts === 1 ? '' : 's'}` : 'not running'),
        h('dt', {}, 'points measured'), h('dd', {class: 'points-measured'}, `${d.points_measured} since the daemon started`),
        fleet ? [h('dt', {}, 'last heartbeat'), h('dd', {title: d.last_heartbeat_at}, age(d.last_heartbeat_at))] : '',
        d.last_error ? [h('dt', {}, 'last error'), h('dd', {class: 'error'}, d.last_error)] : ''),
      h('div', {class: 'device-peaks'}, peaks,
        !d.measured ? h('p', {class: 'muted'}, 'No measured roofline yet: the chart shows datasheet ceilings.')
        : word === 'simulated' ? h('p', {class: 'warn'}, 'Simulated peaks: the mock engine\'s model of this GPU, not a measurement.') : ''),
      chartEl);
    return {el, chartEl, d};
  }

  async function load() {
    try {
      const {devices} = await get('/api/v1/devices');
      await whenECharts();
      if (disposed) return;
      settle(devices);
      charts.splice(0).forEach((c) => c.dispose());
      if (!devices.length) {
        body.replaceChildren(emptyState('This daemon has no devices.'));
        return;
      }
      const nodes = [...nodesOf(devices)];
      const fleet = nodes.length > 1;
      const cards = devices.map((d) => card(d, fleet));
      where.textContent = fleet ? `${nodes.length} nodes` : nodes.length ? `on node ${nodes[0]}` : '';
      if (!fleet) {
        body.replaceChildren(h('div', {class: 'devices'}, cards.map((c) => c.el)));
      } else {
        // By node, in the API's order (the answering node first).
        body.replaceChildren(...nodes.map((node) => {
          const own = cards.filter((c) => c.d.node === node);
          const offline = own.every((c) => c.d.state === 'offline');
          const beat = own.map((c) => c.d.last_heartbeat_at).filter(Boolean).sort().pop();
          return h('section', {class: 'node-group', dataset: {node}},
            h('div', {class: 'title-row node-head'}, h('h3', {}, `node ${node}`),
              h('span', {class: `badge node-state ${offline ? 'state-offline' : 'state-idle'}`}, offline ? 'offline' : 'online'),
              h('span', {class: 'muted', title: beat || ''},
                `${own.length} device${own.length === 1 ? '' : 's'} · last heartbeat ${beat ? age(beat) : 'never'}`)),
            h('div', {class: 'devices'}, own.map((c) => c.el)));
        }));
      }
      for (const c of cards) {
        if (!hasPeaks(c.d)) {
          c.chartEl.replaceWith(h('p', {class: 'muted'},
            'No peaks known for this device yet: it is not in the catalog, and its roofline is measured before its first job.'));
          continue;
        }
        const chart = echarts.init(c.chartEl);
        chart.setOption(deviceRooflineOption(c.d));
        charts.push(chart);
      }
      root.dataset.chartsReady = '1';
    } catch (e) {
      body.replaceChildren(errorBox(e));
    }
  }
  const reload = throttle(load, 1000);
  load();
  const onResize = () => charts.forEach((c) => c.resize());
  window.addEventListener('resize', onResize);
  return {
    // A device's state, job, worker, error or roofline changed (on any node of a fleet), or a
    // job's did (the devices that run it).
    onEvent(e) { if (e.type === 'device' || e.type === 'job' || e.type === 'reset') reload(); },
    unmount() {
      disposed = true;
      window.removeEventListener('resize', onResize);
      charts.forEach((c) => c.dispose());
    },
  };
}
