// RNNLM, core/docs/models.md "RNNLM": embedding, a 2-layer LSTM and a vocabulary-sized
// FC (4 vertices, 3 edges), cutoff 1.
#include "zoo/builder.hpp"
#include "zoo/zoo.hpp"

namespace pase::zoo {

GraphSpec rnnlm(int64_t batch) {
  constexpr int64_t kSeq = 256, kVocab = 100000, kUnits = 2048;
  Builder b("rnnlm", 1);
  const std::string tokens = b.input("tokens", {batch, kSeq});

  std::string x = b.embedding(tokens, kVocab, kUnits);  // no edge: reads a graph input
  x = b.lstm(x, kUnits, 2);
  x = b.fc(x, kVocab);  // on (b, 256, 2048)
  b.sce(x);
  return std::move(b).finish();
}

}  // namespace pase::zoo
