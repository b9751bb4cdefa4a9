// A picture of the layer graph, each vertex coloured by how its layer is split.
//
// Layout: a layered drawing, data flowing left to right, in the columns that
// graph-layout.js gives (longest-path depth, ordered to keep edges short). The
// benchmark networks are long and thin (ResNet-101 is ~240 columns deep), so
// the columns wrap into rows that fit the container, like lines of text; an
// edge that crosses a row break leaves at the right margin and re-enters at the
// left. A few hundred vertices draw in milliseconds.
//
// Large graphs: runs of repeated blocks (blocks.js: the Transformer's six
// encoder layers, GPT-2's twelve) are drawn as one node each, "×6" with the
// blocks' names, coloured by the split kind of most of their cost; clicking
// one (or Enter) expands it in place, and the toolbar expands or collapses
// them all. Graphs of at most `collapseAbove` vertices are drawn whole. Up
// to `labelUpTo` drawn nodes carry their names; more are dots whose names,
// in small print, show once zoomed in to `closeZoom`. Zoom and pan
// (graph-zoom.js): the toolbar's − / + / Fit, the wheel, a pinch, dragging
// and keys; the picture keeps its size on the page. In a plan with a
// pipeline each node is ringed in its stage's colour (views/pipeline.js).

import { formatCost } from '../format.js';
import { svg, el } from './dom.js';
import { splitKinds, splitKind, splitKindLabel, describeSplits } from './split-kind.js';
import { findRepeatedBlocks } from './blocks.js';
import { layerColumns } from './graph-layout.js';
import { makeZoom, zoomStep } from './graph-zoom.js';
import { stageClass, stageOf } from './pipeline.js';

// Larger graphs are not drawn: thousands of SVG nodes make the page sluggish
// and the picture unreadable anyway.
const maxDrawnVertices = 4000;
const collapseAbove = 40;
const labelUpTo = 80;

// The view of each container: the plan drawn, its runs of blocks and which
// are expanded, the zoom ({k, x, y}: scale and the viewBox's corner).
const views = new WeakMap();

/**
 * A layer's name as the picture prints it: an ONNX export's path names its
 * module first and its op last (`/layer1/layer1.0/conv1/Conv`), so a name
 * of three parts or more is cut to the two before the last
 * (`layer1.0/conv1`), which tell its neighbours apart; other names whole.
 * The tooltip keeps the full name.
 */
export function pictureName(name) {
  const parts = name.split('/').filter(Boolean);
  return parts.length >= 3 ? parts.slice(-3, -1).join('/') : name;
}

function truncate(text, chars) {
  return text.length <= chars ? text : `${text.slice(0, Math.max(1, chars - 1))}…`;
}

/**
 * Draws `plan` into `container`; `onSelect(vertexId)` is called when a vertex
 * is clicked or activated with the keyboard. Drawing the same plan again (a
 * resize) keeps the expanded blocks and the zoom.
 */
export function renderGraph(container, plan, { onSelect } = {}) {
  let view = views.get(container);
  if (!view || view.plan !== plan) {
    const runs = plan.vertices.length > collapseAbove && plan.vertices.length <= maxDrawnVertices
      ? findRepeatedBlocks(plan.vertices, plan.edges) : [];
    view = { plan, runs, expanded: new Set(), zoom: { k: 1, x: 0, y: 0 }, selected: null };
    views.set(container, view);
  }
  view.onSelect = onSelect;
  draw(container, view);
}

/** The kind of most of a run's cost (ties: of most of its layers). */
function runKind(members) {
  const totals = new Map();
  for (const v of members) {
    const kind = splitKind(v);
    const t = totals.get(kind) ?? { cost: 0, count: 0 };
    t.cost += v.cost > 0 ? v.cost : 0;
    t.count += 1;
    totals.set(kind, t);
  }
  return [...totals].sort(([, a], [, b]) => b.cost - a.cost || b.count - a.count)[0][0];
}

function runTitle(run, members, kind) {
  const counts = new Map();
  for (const v of members) counts.set(splitKind(v), (counts.get(splitKind(v)) ?? 0) + 1);
  const kinds = [...counts].map(([k, c]) => `${splitKindLabel(k).toLowerCase()} ${c}`).join(', ');
  const cost = members.reduce((sum, v) => sum + (Number.isFinite(v.cost) ? v.cost : 0), 0);
  return `${run.name}: ${run.blocks} repeated blocks, ${members.length} layers\nmostly ${splitKindLabel(kind).toLowerCase()} (${kinds})\ncost ${formatCost(cost)}\nClick to expand`;
}

function draw(container, view) {
  const { plan } = view;
  const { vertices, edges } = plan;
  const n = vertices.length;
  if (n > maxDrawnVertices) {
    container.replaceChildren(el('p', { class: 'placeholder', text: `${n} layers are too many to draw; the table lists them all.` }));
    return;
  }
  // The drawn items: each vertex, or the run it is collapsed into.
  const items = [];
  const itemOf = new Array(n);
  view.runOf = new Map();
  let next = 0;
  for (const [index, run] of view.runs.entries()) {
    for (const id of run.vertices) view.runOf.set(id, index);
  }
  for (let v = 0; v < n; v++) {
    const index = view.runOf.get(v);
    if (index !== undefined && !view.expanded.has(view.runs[index].key)) {
      const run = view.runs[index];
      if (v === run.first) {
        itemOf[v] = next;
        items.push({ run, index });
        next += 1;
      } else {
        itemOf[v] = itemOf[run.first];
      }
    } else {
      itemOf[v] = next;
      items.push({ vertex: vertices[v] });
      next += 1;
    }
  }
  // The drawn edges: one per pair of items, its cost the sum.
  const drawnEdges = new Map();
  for (const e of edges) {
    const a = itemOf[e.src];
    const b = itemOf[e.dst];
    if (a === b) continue;
    const key = `${a}>${b}`;
    const d = drawnEdges.get(key);
    if (d) {
      d.cost += e.cost;
      d.count += 1;
    } else {
      drawnEdges.set(key, { src: a, dst: b, cost: e.cost, count: 1 });
    }
  }
  const m = items.length;
  const links = [...drawnEdges.values()];
  const columns = layerColumns(m, links);

  const nameOf = (item) => (item.run ? item.run.label : pictureName(item.vertex.name));
  // Geometry. Small pictures get labelled nodes; large ones dots.
  const labelled = m <= labelUpTo;
  const width = Math.max(320, container.clientWidth || 800);
  const padX = labelled ? 16 : 14;
  const usable = width - 2 * padX;
  // Labels are cut at 12 characters; columns are as wide as the longest needs.
  const labelChars = labelled ? Math.min(12, Math.max(...items.map((item) => nameOf(item).length))) : 0;
  const minColumn = labelled ? Math.max(44, labelChars * 6.4 + 14) : 17;
  const maxColumn = labelled ? 132 : 30;
  const rowPitch = labelled ? 50 : 17;
  const radius = labelled ? 8 : 5;
  const rowGap = labelled ? 22 : 26;
  // Columns per row: as many as fit, then evened out so the last row is not
  // a stub.
  const fit = Math.max(3, Math.floor(usable / minColumn));
  const rows = Math.ceil(columns.length / fit);
  const perRow = Math.ceil(columns.length / rows);
  const columnWidth = Math.min(maxColumn, usable / perRow);
  // Room above each row for the arcs of edges that skip columns.
  const arcRoom = labelled ? 18 : 12;

  const position = new Array(m);
  const bands = [];
  let top = 4;
  for (let start = 0; start < columns.length; start += perRow) {
    const rowColumns = columns.slice(start, start + perRow);
    const tallest = Math.max(...rowColumns.map((c) => c.length));
    const height = arcRoom + tallest * rowPitch;
    rowColumns.forEach((col, k) => {
      const x = padX + (k + 0.5) * columnWidth;
      const offset = arcRoom + ((tallest - col.length) * rowPitch) / 2;
      col.forEach((v, i) => {
        position[v] = { x, y: top + offset + (i + 0.5) * rowPitch, row: bands.length };
      });
    });
    bands.push({ top, height, columns: rowColumns.length });
    top += height + rowGap;
  }
  const totalHeight = top - rowGap + 8;
  const rightEdge = padX + Math.min(perRow, columns.length) * columnWidth;

  // An arc over the lane from (x1, y1) to (x2, y2), within the row's band;
  // `lift1`/`lift2` start and end it on a vertex's rim (radius) or not (0).
  const arc = (x1, y1, lift1, x2, y2, lift2, row) => {
    const span = Math.round(Math.abs(x2 - x1) / columnWidth);
    const room = Math.min(y1, y2) - bands[row].top - 2;
    // A cubic reaches 3/4 of its control points' offset.
    const peak = Math.min(y1, y2) - Math.min(room, 6 + 3 * span) * (4 / 3);
    const dx = (x2 - x1) / 4;
    return `M${x1},${y1 - lift1} C${x1 + dx},${peak} ${x2 - dx},${peak} ${x2},${y2 - lift2}`;
  };
  const lastColumnX = padX + (perRow - 0.5) * columnWidth;
  const firstColumnX = padX + 0.5 * columnWidth;
  // A block is a rounded box wider than a vertex's dot.
  const rimOf = (item) => (item.run ? radius + 5 : radius);

  const edgePaths = links.map((e) => {
    const a = position[e.src];
    const b = position[e.dst];
    const ra = rimOf(items[e.src]);
    const rb = rimOf(items[e.dst]);
    const moved = e.cost > 0;
    const count = e.count > 1 ? ` (${e.count} edges)` : '';
    const title = svg('title', { text: `${nameOf(items[e.src])} → ${nameOf(items[e.dst])}${count}${moved ? `: re-distribution ${formatCost(e.cost)}` : ''}` });
    const cls = moved ? 'edge redistributed' : 'edge';
    if (a.row === b.row) {
      const span = Math.round((b.x - a.x) / columnWidth);
      // Only an edge that stays in its lane would run through the vertices
      // between its ends (a residual connection, say): it arcs over them.
      // Others pass between them as an S-curve.
      if (span <= 1 || Math.abs(a.y - b.y) > rowPitch / 2) {
        const mid = (a.x + b.x) / 2;
        return svg('path', { class: cls, d: `M${a.x + ra},${a.y} C${mid},${a.y} ${mid},${b.y} ${b.x - rb},${b.y}` }, title);
      }
      return svg('path', { class: `${cls} skip`, d: arc(a.x, a.y, radius, b.x, b.y, radius, a.row) }, title);
    }
    // Crosses a row break: out at the right margin, in at the left one, arcing
    // over any vertices on the way like a skip edge.
    const rightX = rightEdge + 4;
    const leftX = padX - 8;
    const leave = a.x >= lastColumnX - 1 ? `M${a.x + ra},${a.y} L${rightX},${a.y}` : arc(a.x, a.y, radius, rightX, a.y, 0, a.row);
    const enter = b.x <= firstColumnX + 1 ? `M${leftX},${b.y} L${b.x - rb},${b.y}` : arc(leftX, b.y, 0, b.x, b.y, radius, b.row);
    return svg('path', { class: `${cls} wrapped`, d: `${leave} ${enter}` }, title);
  });

  const labelOf = (text) => truncate(text, Math.max(labelChars, Math.floor((columnWidth - 10) / 6.4)));
  // Dots' names, 3.2 units high (10 px from closeZoom on), as wide as a column.
  const closeLabel = (text, y) => svg('text', {
    class: 'zoom-label', y, 'text-anchor': 'middle', text: truncate(text, Math.max(4, Math.floor(columnWidth / 1.9))),
  });
  // A node's stage ring: the stage of its layer, or of all of a run's.
  const stages = stageOf(plan);
  const ring = (ids) => {
    const s = stages?.[ids[0]];
    return Number.isInteger(s) && ids.every((id) => stages[id] === s)
      ? { cls: ` staged ${stageClass(s)}`, s, data: { stage: s } } : { cls: '', s: null, data: {} };
  };
  const keys = (activate) => (event) => {
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      activate();
    }
  };
  const nodes = items.map((item, i) => {
    const p = position[i];
    if (item.run) {
      const { run, index } = item;
      const members = run.vertices.map((id) => vertices[id]);
      const kind = runKind(members);
      const expand = () => {
        view.expanded.add(run.key);
        draw(container, view);
        container.querySelector(`.node[data-vertex="${run.first}"]`)?.focus();
      };
      const staged = ring(run.vertices);
      const w = 2 * (radius + 5);
      const h = labelled ? 18 : 11;
      return svg('g', {
        class: `node block kind-${kind}${staged.cls}`,
        tabindex: 0,
        role: 'button',
        'aria-expanded': 'false',
        'aria-label': `${run.name}: ${run.blocks} repeated blocks of ${members.length} layers, collapsed; press Enter to expand`,
        dataset: { block: index, blocks: run.blocks, layers: members.length, ...staged.data },
        transform: `translate(${p.x},${p.y})`,
        onclick: expand,
        onkeydown: keys(expand),
      }, [
        svg('title', { text: runTitle(run, members, kind) }),
        svg('rect', { x: -w / 2, y: -h / 2, width: w, height: h, rx: 4 }),
        svg('text', { class: 'block-count', y: labelled ? 3.5 : 3, 'text-anchor': 'middle', text: `×${run.blocks}` }),
        labelled ? svg('text', { y: h / 2 + 12, 'text-anchor': 'middle', text: labelOf(run.label) }) : closeLabel(run.label, h / 2 + 5),
      ]);
    }
    const v = item.vertex;
    const kind = splitKind(v);
    const activate = () => view.onSelect?.(v.id);
    const staged = ring([v.id]);
    return svg('g', {
      class: `node kind-${kind}${staged.cls}`,
      tabindex: 0,
      role: 'button',
      'aria-label': `${v.name}, ${v.op}, ${splitKindLabel(kind)}${staged.s === null ? '' : `, stage ${staged.s}`}`,
      dataset: { vertex: v.id, ...staged.data },
      transform: `translate(${p.x},${p.y})`,
      onclick: activate,
      onkeydown: keys(activate),
    }, [
      svg('title', { text: `${v.name} (${v.op})\n${splitKindLabel(kind)}: ${describeSplits(v)}\ncost ${formatCost(v.cost)}${staged.s === null ? '' : `\nstage ${staged.s}`}` }),
      svg('circle', { r: radius }),
      labelled ? svg('text', { y: radius + 13, 'text-anchor': 'middle', text: labelOf(pictureName(v.name)) })
        : closeLabel(pictureName(v.name), radius + 5),
    ]);
  });

  const separators = bands.slice(1).map((band) =>
    svg('line', { class: 'row-break', x1: padX, x2: rightEdge, y1: band.top - rowGap / 2, y2: band.top - rowGap / 2 }));

  const picture = svg('svg', {
    class: labelled ? 'graph-svg labelled' : 'graph-svg',
    width,
    height: totalHeight,
    role: 'group',
    'aria-label': `Layer graph of ${plan.graph}: ${n} layers${m < n ? `, drawn as ${m} nodes` : ''}`,
  }, [separators, svg('g', { class: 'edges' }, edgePaths), svg('g', { class: 'nodes' }, nodes)]);
  const viewport = el('div', {
    class: 'graph-viewport',
    tabindex: 0,
    'aria-label': 'Layer graph: + and - zoom, 0 fits, the arrow keys pan',
  }, picture);
  const tools = toolbar(container, view, { n, m });
  container.replaceChildren(tools.bar, viewport);
  const zoom = makeZoom(view, picture, viewport, width, totalHeight, tools.level);
  tools.wire(zoom);
  if (view.selected !== null) highlightVertex(container, view.selected);
}

/** The toolbar: how many nodes for how many layers, expand/collapse, zoom. */
function toolbar(container, view, { n, m }) {
  const collapsed = view.runs.filter((run) => !view.expanded.has(run.key)).length;
  const level = el('span', { class: 'graph-zoom-level', 'aria-live': 'polite' });
  const zoomOut = el('button', { type: 'button', class: 'graph-zoom-out', title: 'Zoom out (-)', 'aria-label': 'Zoom out', text: '−' });
  const zoomIn = el('button', { type: 'button', class: 'graph-zoom-in', title: 'Zoom in (+)', 'aria-label': 'Zoom in', text: '+' });
  const fit = el('button', { type: 'button', class: 'graph-zoom-fit', title: 'Show the whole graph (0)', text: 'Fit' });
  const toggle = view.runs.length === 0 ? null : el('button', {
    type: 'button',
    class: 'graph-expand',
    'aria-pressed': collapsed === 0 ? 'true' : 'false',
    text: collapsed === 0 ? 'Collapse repeated blocks' : 'Expand all blocks',
    onclick: () => {
      if (collapsed === 0) view.expanded.clear();
      else for (const run of view.runs) view.expanded.add(run.key);
      draw(container, view);
      container.querySelector('.graph-expand')?.focus();
    },
  });
  const count = m < n ? `${n} layers drawn as ${m} nodes; a ×N box is N repeated blocks: click it to expand`
    : `${n} layer${n === 1 ? '' : 's'}`;
  const bar = el('div', { class: 'graph-tools' }, [
    el('span', { class: 'graph-count', text: count }),
    toggle,
    el('span', { class: 'graph-zoom', role: 'group', 'aria-label': 'Zoom' }, [zoomOut, level, zoomIn, fit]),
  ]);
  return {
    bar,
    level,
    wire: (zoom) => {
      zoomOut.addEventListener('click', () => zoom.by(1 / zoomStep));
      zoomIn.addEventListener('click', () => zoom.by(zoomStep));
      fit.addEventListener('click', () => zoom.reset());
    },
  };
}

/** The legend of split kinds and re-distribution edges. */
export function renderLegend(list) {
  list.replaceChildren(
    ...splitKinds.map((k) => el('li', {}, [el('span', { class: `dot kind-${k.id}` }), k.label])),
    el('li', {}, [el('span', { class: 'line redistributed' }), 'Re-distribution']),
  );
}

/**
 * Marks one vertex as selected (from a click in the table or chart); a
 * vertex inside a collapsed run marks the run's node.
 */
export function highlightVertex(container, vertexId) {
  const view = views.get(container);
  if (view) view.selected = vertexId;
  for (const old of container.querySelectorAll('.node.selected')) old.classList.remove('selected');
  const node = container.querySelector(`.node[data-vertex="${vertexId}"]`)
    ?? container.querySelector(`.node.block[data-block="${view?.runOf?.get(vertexId)}"]`);
  node?.classList.add('selected');
}
