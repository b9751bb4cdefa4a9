// The dense rows of the dynamic program (core/src/kernels/min_row.hpp) against the
// scalar loop they replace: the same least sum, bit for bit, and the same
// arg-min (the first, or the least rep over groups), on rows full of ties
// (small integers) or of values whose least may come late, infinities,
// lengths that leave tails after the vector lanes, odd blocks and odd row
// counts, one and two row terms, strided output, with every kernel this
// machine can run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/min_row.hpp"

using namespace pase::detail;

namespace {

struct RowCase {
  int nv, nb, rows;
  bool two, rep;
  int spread;  // values 0 .. spread (and infinities): few give ties, many a late least
};

// The loop of the reference engine, over configurations (rep null) or over
// groups that stand for their rep: the least sum, then the least rep.
void scalar(const double* p, const double* t1, const double* t2, const double* rep, int n,
            double* out, uint16_t* arg) {
  double best = std::numeric_limits<double>::infinity();
  double a = best;
  for (int c = 0; c < n; ++c) {
    double s = p[c] + t1[c];
    if (t2) s += t2[c];
    const double i = rep ? rep[c] : c;
    if (s < best || (s == best && i < a)) {
      best = s;
      a = i;
    }
  }
  *out = best;
  *arg = static_cast<uint16_t>(a == std::numeric_limits<double>::infinity() ? 0 : a);
}

using Kernel = void (*)(const double*, int, const DenseRows&, int64_t, int64_t, const DenseOut&);

void check_kernel(Kernel kernel, const RowCase& k, std::mt19937& rng) {
  const double inf = std::numeric_limits<double>::infinity();
  std::uniform_int_distribution<int> small(0, k.spread);
  auto value = [&] { return small(rng) == k.spread ? inf : static_cast<double>(small(rng)); };
  std::vector<double> p(static_cast<size_t>(k.nb) * k.nv), m1(static_cast<size_t>(k.rows) * k.nv),
      m2(m1.size()), rep(p.size());
  for (double& x : p) x = value();
  for (double& x : m1) x = value();
  for (double& x : m2) x = value();
  // Each vector's columns stand for distinct configurations in no order.
  for (int b = 0; b < k.nb; ++b) {
    std::vector<int> ids(k.nv);
    for (int c = 0; c < k.nv; ++c) ids[c] = 3 * c + 1;
    std::shuffle(ids.begin(), ids.end(), rng);
    for (int c = 0; c < k.nv; ++c) rep[static_cast<size_t>(b) * k.nv + c] = ids[c];
  }
  // A row of infinities only: the arg-min is the first configuration.
  for (int c = 0; c < k.nv; ++c) m1[c] = inf;
  std::vector<const double*> r1(k.rows), r2(k.rows);
  for (int r = 0; r < k.rows; ++r) {
    r1[r] = m1.data() + static_cast<size_t>(r) * k.nv;
    r2[r] = m2.data() + static_cast<size_t>(r) * k.nv;
  }
  DenseRows rows{r1.data(), k.two ? r2.data() : nullptr, k.nv};
  // Rows [1, rows) only, as a thread's share would be, written 3 apart and
  // the vectors one row further apart than their rows need.
  const int64_t r0 = k.rows > 1 ? 1 : 0, n = k.rows - r0;
  const int64_t row_stride = 3, vec_stride = n * row_stride + 1;
  std::vector<double> out(static_cast<size_t>(k.nb * vec_stride), -1.0);
  std::vector<uint16_t> args(out.size());
  kernel(p.data(), k.nb, rows, r0, k.rows,
         DenseOut{out.data(), args.data(), vec_stride, row_stride, k.rep ? rep.data() : nullptr});
  for (int b = 0; b < k.nb; ++b)
    for (int64_t r = 0; r < n; ++r) {
      double want;
      uint16_t want_arg;
      const size_t off = static_cast<size_t>(b) * k.nv;
      scalar(p.data() + off, r1[r0 + r], k.two ? r2[r0 + r] : nullptr,
             k.rep ? rep.data() + off : nullptr, k.nv, &want, &want_arg);
      CAPTURE(b);
      CAPTURE(r);
      const int64_t e = b * vec_stride + r * row_stride;
      CHECK(out[e] == want);
      CHECK(args[e] == want_arg);
    }
  // One row on its own, as the unblocked rows use it.
  double one;
  uint16_t one_arg;
  dense_row(p.data(), r1[r0], k.two ? r2[r0] : nullptr, k.rep ? rep.data() : nullptr, k.nv, &one,
            &one_arg);
  CHECK(one == out[0]);
  CHECK(one_arg == args[0]);
}

}  // namespace

TEST_CASE("dense rows: every kernel equals the scalar loop, ties and tails included") {
  std::vector<std::pair<const char*, Kernel>> kernels = {
      {"two lanes", [](const double* p, int nb, const DenseRows& rows, int64_t r0, int64_t r1,
                       const DenseOut& o) { simd::dense_block<2>(p, nb, rows, r0, r1, o); }},
      {"dispatched", dense_rows}};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (simd::has_avx2()) kernels.push_back({"avx2", simd::dense_block_avx2});
#endif
  std::mt19937 rng(7);
  for (const std::pair<const char*, Kernel>& k : kernels)
    for (int nv : {1, 3, 8, 17, 33, 67, 100, 261})
      for (int nb : {1, 2, 3, 5})
        for (int rows : {1, 2, 5})
          for (bool two : {false, true})
            for (bool rep : {false, true})
              for (int spread : {6, 5000}) {
                CAPTURE(k.first);
                CAPTURE(nv);
                CAPTURE(nb);
                CAPTURE(rows);
                CAPTURE(two);
                CAPTURE(rep);
                CAPTURE(spread);
                check_kernel(k.second, RowCase{nv, nb, rows, two, rep, spread}, rng);
              }
}
