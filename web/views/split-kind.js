// How a layer is split, for colouring the graph and the table.
//
// The batch dimension of a vertex is the one named "b" (the graph format's
// convention), else its first dimension. A layer whose only split dimension is
// the batch is data parallel ("batch only"); one that splits only other
// dimensions (output channels, hidden units, vocabulary, ...) is model
// parallel ("parameter only"); both is "hybrid".

export const splitKinds = [
  { id: 'batch', label: 'Batch only' },
  { id: 'parameter', label: 'Parameter only' },
  { id: 'hybrid', label: 'Hybrid' },
  { id: 'unsplit', label: 'Unsplit' },
];

export function batchDimIndex(vertex) {
  const i = vertex.dims.indexOf('b');
  return i >= 0 ? i : 0;
}

/** 'batch' | 'parameter' | 'hybrid' | 'unsplit' */
export function splitKind(vertex) {
  const config = vertex.config ?? [];
  const b = batchDimIndex(vertex);
  const batchSplit = (config[b] ?? 1) > 1;
  const otherSplit = config.some((split, i) => i !== b && split > 1);
  if (batchSplit) return otherSplit ? 'hybrid' : 'batch';
  return otherSplit ? 'parameter' : 'unsplit';
}

export function splitKindLabel(id) {
  return splitKinds.find((k) => k.id === id)?.label ?? id;
}

/** "b÷8 · n÷2", or "unsplit". */
export function describeSplits(vertex) {
  const parts = vertex.dims
    .map((dim, i) => [dim, vertex.config?.[i] ?? 1])
    .filter(([, split]) => split > 1)
    .map(([dim, split]) => `${dim}÷${split}`);
  return parts.length ? parts.join(' · ') : 'unsplit';
}
