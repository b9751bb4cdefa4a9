// Repeated blocks of a graph, found from its layer names, so that the graph
// picture can draw a run of them as one node ("enc1–enc6, 6 blocks").
//
// The rule. A name has a block prefix wherever a number is followed by a
// separator (`_`, `.` or `/`): `enc3_attn_qkv` has `enc3_`, `layer3_5_conv1`
// has `layer3_` and `layer3_5_`, an ONNX name `/layer1/layer1.0/conv1/Conv`
// has `/layer1/` and `/layer1/layer1.0/`. Replacing the number by `#` gives
// the block's family (`enc#_`); its blocks are the vertices that share a
// prefix. A run is a stretch of blocks of one family with consecutive
// numbers (enc1, enc2, ...) that
//   - each are a contiguous range of vertex ids, the next starting where the
//     one before ends (vertex ids are in the order of the graph's layers,
//     which is topological);
//   - look alike: the same names after the prefix, with the same ops, in the
//     same order;
// with at least 2 blocks and 4 vertices. Runs are taken largest first, each
// one only if it overlaps none taken before, so an outer run (the 6 encoder
// layers) wins over runs inside it, and an outer family whose blocks differ
// (ResNet's layer1 to layer4, of 3, 4, 23 and 3 bottlenecks) leaves its
// inner runs (layer3_1 to layer3_22) to be taken. The Transformer's 204
// vertices draw as about 30 nodes, the 12 layers of GPT-2 as one. Names
// without numbered prefixes (AlexNet) give no runs, and neither does a graph
// whose edges do not follow the vertex order.
//
// O(V * name length) plus a sort of the candidate runs.

const numbered = /\d+(?=[_./])/g;

/**
 * The picture's short name of a run: the stem after its last `/`, then the
 * numbers, "enc1–enc6", "layer0–layer11", or with a stem that ends in a
 * separator only the last number: "layer3_1–22", "layer1.1–2" (an ONNX
 * export's `/layer1/layer1.1/` to `/layer1/layer1.2/`).
 */
function shortLabel(stem, first, last) {
  const tail = stem.slice(stem.lastIndexOf('/') + 1);
  return tail === '' || /[_.]$/.test(tail) ? `${tail}${first}–${last}` : `${tail}${first}–${tail}${last}`;
}

/**
 * The runs to collapse: [{key, family, label, name, first, last, blocks,
 * vertices}] in vertex order, `vertices` the ids of the whole run
 * (ascending), `blocks` the number of blocks, `key` a stable name
 * ("enc#_:1-6"), `label` how the picture names it ("enc1–enc6", see
 * shortLabel()) and `name` in full, the first and last blocks' prefixes
 * ("/layer1/layer1.1–/layer1/layer1.2").
 * @param {{id: number, name: string, op: string}[]} vertices in id order
 * @param {{src: number, dst: number}[]} edges
 */
export function findRepeatedBlocks(vertices, edges) {
  if (!vertices.every((v, i) => v.id === i)) return [];
  if (!edges.every((e) => e.src < e.dst)) return [];
  /** family -> Map(number -> {prefix, ids}) */
  const families = new Map();
  for (const v of vertices) {
    for (const match of v.name.matchAll(numbered)) {
      const end = match.index + match[0].length;
      const stem = v.name.slice(0, match.index);
      const sep = v.name[end];
      const family = `${stem}#${sep}`;
      const number = Number(match[0]);
      if (!Number.isSafeInteger(number)) continue;
      let blocks = families.get(family);
      if (!blocks) families.set(family, (blocks = new Map()));
      let block = blocks.get(number);
      if (!block) blocks.set(number, (block = { number, prefix: v.name.slice(0, end + 1), stem, ids: [] }));
      block.ids.push(v.id);
    }
  }
  const signature = (block) => block.ids.map((id) => `${vertices[id].name.slice(block.prefix.length)}\u0000${vertices[id].op}`).join('\u0001');
  const contiguous = (block) => block.ids.at(-1) - block.ids[0] === block.ids.length - 1;

  const candidates = [];
  for (const [family, blocks] of families) {
    const sorted = [...blocks.values()].filter(contiguous).sort((a, b) => a.number - b.number);
    let start = 0;
    while (start < sorted.length) {
      let end = start + 1;
      const sig = signature(sorted[start]);
      while (end < sorted.length
        && sorted[end].number === sorted[end - 1].number + 1
        && sorted[end].ids[0] === sorted[end - 1].ids.at(-1) + 1
        && signature(sorted[end]) === sig) end += 1;
      const run = sorted.slice(start, end);
      const count = run.reduce((sum, b) => sum + b.ids.length, 0);
      if (run.length >= 2 && count >= 4) {
        const first = run[0];
        const last = run.at(-1);
        candidates.push({
          key: `${family}:${first.number}-${last.number}`,
          family,
          label: shortLabel(first.stem, first.number, last.number),
          name: `${first.prefix.slice(0, -1)}–${last.prefix.slice(0, -1)}`,
          first: first.ids[0],
          last: last.ids.at(-1),
          blocks: run.length,
        });
      }
      start = end;
    }
  }
  candidates.sort((a, b) => (b.last - b.first) - (a.last - a.first) || a.first - b.first);
  const taken = [];
  for (const c of candidates) {
    if (taken.every((t) => c.last < t.first || c.first > t.last)) taken.push(c);
  }
  taken.sort((a, b) => a.first - b.first);
  return taken.map((run) => ({ ...run, vertices: Array.from({ length: run.last - run.first + 1 }, (_, i) => run.first + i) }));
}
