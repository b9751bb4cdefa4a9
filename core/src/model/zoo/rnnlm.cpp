// RNNLM, core/docs/models.md "RNNLM": embedding, a 2-layer LSTM and a vocabulary-sized
// FC (4 vertices, 3 edges), cutoff 1. The sequence is 256 tokens unless the
// caller asks for another length.
#include "model/builder.hpp"
#include "model/zoo/zoo.hpp"

namespace pase::zoo {

using build::Builder;

GraphSpec rnnlm(int64_t batch, int64_t seq) {
  constexpr int64_t kVocab = 100000, kUnits = 2048;
  Builder b("rnnlm", 1);
  const std::string tokens = b.input("tokens", {batch, seq});

  std::string x = b.embedding(tokens, kVocab, kUnits);  // no edge: reads a graph input
  x = b.lstm(x, kUnits, 2);
  x = b.fc(x, kVocab);  // on (b, 256, 2048)
  b.sce(x);
  return std::move(b).finish();
}

}  // namespace pase::zoo
