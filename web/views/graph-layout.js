// The columns of the layer graph's picture (graph.js), data flowing left to
// right. A vertex's column is its longest-path depth from the inputs; within a
// column vertices are ordered by the barycentre of their neighbours (a few
// sweeps of the classic Sugiyama-style heuristic) to keep edges short and
// mostly uncrossed. O(V + E) per sweep; a few hundred vertices lay out in
// milliseconds. The vertices here are the picture's drawn nodes: a run of
// repeated blocks drawn as one node is one vertex.

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

/**
 * The columns of the `n` vertices joined by `links` ([{src, dst}]):
 * columns[c] lists the vertices at depth c, in drawing order (top to
 * bottom). Every depth up to the deepest has a column.
 */
export function layerColumns(n, links) {
  const preds = Array.from({ length: n }, () => []);
  const succs = Array.from({ length: n }, () => []);
  for (const e of links) {
    preds[e.dst].push(e.src);
    succs[e.src].push(e.dst);
  }
  const depth = depths(n, preds, succs);
  const columns = [];
  for (let v = 0; v < n; v++) (columns[depth[v]] ??= []).push(v);
  for (let c = 0; c < columns.length; c++) columns[c] ??= [];
  orderColumns(columns, preds, succs);
  return columns;
}
