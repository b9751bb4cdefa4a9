// A picture of the layer graph, each vertex coloured by how its layer is split.
//
// Layout: a layered drawing, data flowing left to right. A vertex's column is
// its longest-path depth from the inputs; within a column vertices are ordered
// by the barycentre of their neighbours (a few sweeps of the classic
// Sugiyama-style heuristic) to keep edges short and mostly uncrossed. The
// benchmark networks are long and thin (ResNet-101 is ~240 columns deep), so
// the columns wrap into rows that fit the container, like lines of text; an
// edge that crosses a row break leaves at the right margin and re-enters at the
// left. O(V + E) per sweep; a few hundred vertices draw in milliseconds.

import { formatCost } from '../format.js';
import { svg, el } from './dom.js';
import { splitKinds, splitKind, splitKindLabel, describeSplits } from './split-kind.js';

// Larger graphs are not drawn: thousands of SVG nodes make the page sluggish
// and the picture unreadable anyway.
const maxDrawnVertices = 4000;

/** Column (depth) of each vertex: longest path from a source, Kahn order. */
function depths(n, preds, succs) {
  const indegree = preds.map((p) => p.length);
  const depth = new Array(n).fill(0);
  const queue = [];
  for (let v = 0; v < n; v++) if (indegree[v] === 0) queue.push(v);
  for (let head = 0; head < queue.length; head++) {
    const v = queue[head];
    for (const w of succs[v]) {
      depth[w] = Math.max(depth[w], depth[v] + 1);
      if (--indegree[w] === 0) queue.push(w);
    }
  }
  return depth;
}

/** Orders each column by the mean position of neighbours in the previous column. */
function orderColumns(columns, preds, succs) {
  const pos = new Map();
  const place = () => columns.forEach((col) => col.forEach((v, i) => pos.set(v, i)));
  place();
  const sweep = (range, neighbours) => {
    for (const c of range) {
      const col = columns[c];
      const key = new Map(col.map((v, i) => {
        const ns = neighbours[v];
        // Vertices without neighbours on that side keep their place.
        return [v, ns.length ? ns.reduce((s, u) => s + pos.get(u), 0) / ns.length : i];
      }));
      col.sort((a, b) => key.get(a) - key.get(b) || pos.get(a) - pos.get(b));
      col.forEach((v, i) => pos.set(v, i));
    }
  };
  const forward = [...columns.keys()].slice(1);
  const backward = [...columns.keys()].reverse().slice(1);
  for (let pass = 0; pass < 2; pass++) {
    sweep(forward, preds);
    sweep(backward, succs);
  }
  sweep(forward, preds);
}

function truncate(text, chars) {
  return text.length <= chars ? text : `${text.slice(0, Math.max(1, chars - 1))}…`;
}

/**
 * Draws `plan` into `container`; `onSelect(vertexId)` is called when a vertex
 * is clicked or activated with the keyboard.
 */
export function renderGraph(container, plan, { onSelect } = {}) {
  const { vertices, edges } = plan;
  const n = vertices.length;
  if (n > maxDrawnVertices) {
    container.replaceChildren(el('p', { class: 'placeholder', text: `${n} layers are too many to draw; the table lists them all.` }));
    return;
  }
  const preds = vertices.map(() => []);
  const succs = vertices.map(() => []);
  for (const e of edges) {
    preds[e.dst].push(e.src);
    succs[e.src].push(e.dst);
  }
  const depth = depths(n, preds, succs);
  const columns = [];
  for (let v = 0; v < n; v++) (columns[depth[v]] ??= []).push(v);
  for (let c = 0; c < columns.length; c++) columns[c] ??= [];
  orderColumns(columns, preds, succs);

  // Geometry. Small graphs get labelled vertices; large ones dots.
  const labelled = n <= 40;
  const width = Math.max(320, container.clientWidth || 800);
  const padX = labelled ? 16 : 14;
  const usable = width - 2 * padX;
  // Labels are cut at 12 characters; columns are as wide as the longest needs.
  const labelChars = labelled ? Math.min(12, Math.max(...vertices.map((v) => v.name.length))) : 0;
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

  const position = new Array(n);
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

  const edgePaths = edges.map((e) => {
    const a = position[e.src];
    const b = position[e.dst];
    const moved = e.cost > 0;
    const title = svg('title', { text: `${vertices[e.src].name} → ${vertices[e.dst].name}${moved ? `: re-distribution ${formatCost(e.cost)}` : ''}` });
    const cls = moved ? 'edge redistributed' : 'edge';
    if (a.row === b.row) {
      const span = Math.round((b.x - a.x) / columnWidth);
      // Only an edge that stays in its lane would run through the vertices
      // between its ends (a residual connection, say): it arcs over them.
      // Others pass between them as an S-curve.
      if (span <= 1 || Math.abs(a.y - b.y) > rowPitch / 2) {
        const mid = (a.x + b.x) / 2;
        return svg('path', { class: cls, d: `M${a.x + radius},${a.y} C${mid},${a.y} ${mid},${b.y} ${b.x - radius},${b.y}` }, title);
      }
      return svg('path', { class: `${cls} skip`, d: arc(a.x, a.y, radius, b.x, b.y, radius, a.row) }, title);
    }
    // Crosses a row break: out at the right margin, in at the left one, arcing
    // over any vertices on the way like a skip edge.
    const rightX = rightEdge + 4;
    const leftX = padX - 8;
    const leave = a.x >= lastColumnX - 1 ? `M${a.x + radius},${a.y} L${rightX},${a.y}` : arc(a.x, a.y, radius, rightX, a.y, 0, a.row);
    const enter = b.x <= firstColumnX + 1 ? `M${leftX},${b.y} L${b.x - radius},${b.y}` : arc(leftX, b.y, 0, b.x, b.y, radius, b.row);
    return svg('path', { class: `${cls} wrapped`, d: `${leave} ${enter}` }, title);
  });

  const nodes = vertices.map((v) => {
    const p = position[v.id];
    const kind = splitKind(v);
    const activate = () => onSelect?.(v.id);
    return svg('g', {
      class: `node kind-${kind}`,
      tabindex: 0,
      role: 'button',
      'aria-label': `${v.name}, ${v.op}, ${splitKindLabel(kind)}`,
      dataset: { vertex: v.id },
      transform: `translate(${p.x},${p.y})`,
      onclick: activate,
      onkeydown: (event) => {
        if (event.key === 'Enter' || event.key === ' ') {
          event.preventDefault();
          activate();
        }
      },
    }, [
      svg('title', { text: `${v.name} (${v.op})\n${splitKindLabel(kind)}: ${describeSplits(v)}\ncost ${formatCost(v.cost)}` }),
      svg('circle', { r: radius }),
      labelled ? svg('text', { y: radius + 13, 'text-anchor': 'middle', text: truncate(v.name, Math.max(labelChars, Math.floor((columnWidth - 10) / 6.4))) }) : null,
    ]);
  });

  const separators = bands.slice(1).map((band) =>
    svg('line', { class: 'row-break', x1: padX, x2: rightEdge, y1: band.top - rowGap / 2, y2: band.top - rowGap / 2 }));

  container.replaceChildren(svg('svg', {
    class: labelled ? 'graph-svg labelled' : 'graph-svg',
    width,
    height: totalHeight,
    viewBox: `0 0 ${width} ${totalHeight}`,
    role: 'group',
    'aria-label': `Layer graph of ${plan.graph}: ${n} layers`,
  }, [separators, svg('g', { class: 'edges' }, edgePaths), svg('g', { class: 'nodes' }, nodes)]));
}

/** The legend of split kinds and re-distribution edges. */
export function renderLegend(list) {
  list.replaceChildren(
    ...splitKinds.map((k) => el('li', {}, [el('span', { class: `dot kind-${k.id}` }), k.label])),
    el('li', {}, [el('span', { class: 'line redistributed' }), 'Re-distribution']),
  );
}

/** Marks one vertex as selected (from a click in the table or chart). */
export function highlightVertex(container, vertexId) {
  for (const old of container.querySelectorAll('.node.selected')) old.classList.remove('selected');
  container.querySelector(`.node[data-vertex="${vertexId}"]`)?.classList.add('selected');
}
