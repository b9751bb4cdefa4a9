// How a layer is split, for colouring the graph and the table.
//
// Every vertex of a plan result carries `kinds`, parallel to `dims`: what each
// dimension is ("batch", "sequence", "spatial", "heads", "hidden",
// "reduction", "experts", "vocabulary", "layers" or "other"), as the core
// sees it. The "batch" ones are those the data-parallel baseline splits
// (compare.hpp, batch_dimensions()), so the page and the comparison agree on
// what data parallelism is. A layer whose only split dimensions are batch is
// data parallel ("batch only"); one that splits only other dimensions (output
// channels, hidden units, vocabulary, ...) is model parallel ("parameter
// only"); both is "hybrid". A dimension without a kind counts as "other".

export const splitKinds = [
  { id: 'batch', label: 'Batch only' },
  { id: 'parameter', label: 'Parameter only' },
  { id: 'hybrid', label: 'Hybrid' },
  { id: 'unsplit', label: 'Unsplit' },
];

/** 'batch' | 'parameter' | 'hybrid' | 'unsplit' */
export function splitKind(vertex) {
  const config = vertex.config ?? [];
  const kinds = vertex.kinds ?? [];
  const split = config.map((ways, i) => ({ ways, batch: kinds[i] === 'batch' })).filter((d) => d.ways > 1);
  const batchSplit = split.some((d) => d.batch);
  const otherSplit = split.some((d) => !d.batch);
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
