// The device sweep's chart (pase compare --sweep, the paper's Fig. 6): the
// speedup over data parallelism of PaSE (and of the expert strategy, for the
// paper's networks) at each device count, as a small inline SVG. The x axis
// is log2 of the device count, so 1, 2, 4, 8 are evenly spaced; the dashed
// line at 1 is data parallelism itself.
//
// Test hook: one `circle.sweep-point[data-devices][data-strategy][data-speedup]`
// per strategy and device count, a `.sweep-nofit[data-devices]` mark where no
// strategy fits the memory per GPU, and a `.sweep-nodp[data-devices]` mark
// where data parallelism does not fit: no speedup is drawn over a reference
// that cannot run (nor an expert's that does not fit).

import { formatSeconds } from '../format.js';
import { el, svg } from './dom.js';

const strategies = [
  { id: 'pase', label: 'PaSE' },
  { id: 'expert', label: 'Expert' },
];

/** Round steps for the y axis: 0.5, 1, 2, 5, 10, ... so that 3 to 6 lines show. */
function tickStep(max) {
  for (const step of [0.25, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]) {
    if (max / step <= 6) return step;
  }
  return 10 ** Math.ceil(Math.log10(max / 6));
}

const speedupText = (s) => `${s.toFixed(2)}×`;

/**
 * Draws `points` into `container`: [{devices, pase, expert?, paseTime?,
 * noFit?}] in ascending device order, `pase` and `expert` the speedups over
 * data parallelism (expert absent for a graph without one). Called again as
 * points arrive.
 */
export function renderScaling(container, points) {
  if (points.length === 0) {
    container.replaceChildren();
    return;
  }
  const width = Math.max(240, Math.min(560, container.clientWidth || 320));
  const height = 190;
  const m = { left: 38, right: 12, top: 12, bottom: 34 };
  const plotW = width - m.left - m.right;
  const plotH = height - m.top - m.bottom;
  const maxDevices = Math.max(...points.map((p) => p.devices));
  const span = Math.log2(maxDevices);
  const x = (devices) => m.left + (span > 0 ? (Math.log2(devices) / span) * plotW : plotW / 2);
  const values = points.flatMap((p) => strategies.map((s) => p[s.id]).filter(Number.isFinite));
  const top = Math.max(1.2, ...values) * 1.08;
  const y = (speedup) => m.top + plotH - (speedup / top) * plotH;
  const step = tickStep(top);

  const grid = [];
  for (let v = 0; v <= top + 1e-9; v += step) {
    grid.push(svg('line', { class: 'sweep-grid', x1: m.left, x2: m.left + plotW, y1: y(v), y2: y(v) }));
    grid.push(svg('text', { class: 'sweep-tick', x: m.left - 5, y: y(v) + 3.5, 'text-anchor': 'end', text: `${Number(v.toFixed(2))}×` }));
  }
  const axis = points.map((p) => svg('text', {
    class: 'sweep-tick', x: x(p.devices), y: m.top + plotH + 14, 'text-anchor': 'middle', text: p.devices,
  }));
  axis.push(svg('text', { class: 'sweep-axis', x: m.left + plotW / 2, y: height - 4, 'text-anchor': 'middle', text: 'devices' }));
  const baseline = [
    svg('line', { class: 'sweep-baseline', x1: m.left, x2: m.left + plotW, y1: y(1), y2: y(1) }),
  ];

  const series = strategies.map((s) => {
    const drawn = points.filter((p) => Number.isFinite(p[s.id]));
    if (drawn.length === 0) return null;
    const path = drawn.map((p, i) => `${i ? 'L' : 'M'}${x(p.devices)},${y(p[s.id])}`).join(' ');
    return svg('g', { class: `sweep-series sweep-${s.id}` }, [
      svg('path', { class: 'sweep-line', d: path }),
      drawn.map((p) => svg('circle', {
        class: 'sweep-point',
        cx: x(p.devices),
        cy: y(p[s.id]),
        r: 3.5,
        dataset: { devices: p.devices, strategy: s.id, speedup: p[s.id] },
      }, svg('title', {
        text: `${s.label} at ${p.devices} device${p.devices === 1 ? '' : 's'}: ${speedupText(p[s.id])} over data parallelism`
          + `${s.id === 'pase' && Number.isFinite(p.paseTime) ? `, ${formatSeconds(p.paseTime)} per step` : ''}`,
      }))),
    ]);
  });
  const noFit = points.filter((p) => p.noFit).map((p) => svg('text', {
    class: 'sweep-nofit', x: x(p.devices), y: m.top + plotH - 4, 'text-anchor': 'middle', text: '✕',
    dataset: { devices: p.devices },
  }, svg('title', { text: `${p.devices} device${p.devices === 1 ? '' : 's'}: no strategy fits in the memory per GPU` })));

  // Data parallelism does not fit, so there is no 1× to draw a speedup over.
  const noReference = points.filter((p) => !p.noFit && p.dataParallelFits === false).map((p) => svg('text', {
    class: 'sweep-nodp', x: x(p.devices), y: m.top + plotH - 4, 'text-anchor': 'middle', text: '○',
    dataset: { devices: p.devices },
  }, svg('title', {
    text: `${p.devices} device${p.devices === 1 ? '' : 's'}: data parallelism does not fit in the memory per GPU, so no speedup over it`
      + `${Number.isFinite(p.paseTime) ? `; PaSE plans ${formatSeconds(p.paseTime)} per step` : ''}`,
  })));

  const described = points.map((p) => (p.noFit ? `${p.devices}: does not fit`
    : p.dataParallelFits === false ? `${p.devices}: data parallelism does not fit`
    : `${p.devices}: ${Number.isFinite(p.pase) ? speedupText(p.pase) : '—'}`)).join(', ');
  container.replaceChildren(
    svg('svg', {
      class: 'sweep-svg', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img',
      'aria-label': `PaSE's speedup over data parallelism by device count: ${described}`,
    }, [grid, baseline, axis, series, noFit, noReference]),
    el('ul', { class: 'legend sweep-legend' }, [
      ...strategies.filter((s) => points.some((p) => Number.isFinite(p[s.id])))
        .map((s) => el('li', {}, [el('span', { class: `sweep-swatch sweep-${s.id}` }), s.label])),
      el('li', {}, [el('span', { class: 'sweep-swatch sweep-dp' }), 'Data parallelism (1×)']),
    ]),
  );
}
