// The innermost loop of the dynamic program on rows read in a stream: for
// each of `nb` vectors P_b and each row r (one or two row terms t1_r,
// t2_r), the least sum (P_b[c] + t1_r[c]) + t2_r[c] over the n columns c and
// the column that reaches it first. The sums are formed as the scalar loop
// forms them, so the values and the indices are those of
//
//   for c: if (sum(c) < best) { best = sum(c); arg = c; }
//
// bit for bit. With `rep` (a configuration per column, per vector: the
// columns are groups of configurations, dynamic_program.hpp), the index of a
// column is its rep, and among equal sums the least rep wins, as the scalar
// loop over the configurations themselves would choose.
//
// Every row is read once per block of vectors, two rows by two vectors at a
// time, so that a block of outer states shares each pass over the rows (a
// min-plus product of the block by the rows). Written with the compiler's
// vector types (GCC, Clang): each lane keeps its own least sum and the index
// that reached it, and the lanes are merged by value, then by index. On
// x86-64 a clone for AVX2 is chosen at run time when the processor has it;
// WebAssembly gets SIMD128 with -msimd128. The result is the same
// everywhere. core/docs/performance.md, "Dense rows".
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace pase::detail {

// The rows: t1[r] (and t2[r]) point at row r's n columns.
struct DenseRows {
  const double* const* t1 = nullptr;  // the first row term's rows
  const double* const* t2 = nullptr;  // the second's, or null for one term
  int n = 0;                          // columns
};

// Where the least sums go: vector b's row r at out[b * vec_stride + (r - r0)
// * row_stride], its index at args[] alike. rep: vector b's column c stands
// for configuration rep[b * n + c] (exact as a double); null: c itself.
struct DenseOut {
  double* out = nullptr;
  uint16_t* args = nullptr;
  int64_t vec_stride = 0;
  int64_t row_stride = 1;
  const double* rep = nullptr;
};

namespace simd {

// The helpers below take and return vectors but are always inlined, so no
// call ever passes one: the compilers' note on the AVX calling convention
// does not apply.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wpsabi"
#elif defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

using V2 = double __attribute__((vector_size(16)));
using V4 = double __attribute__((vector_size(32)));

template <int W>
using Vec = std::conditional_t<W == 4, V4, V2>;

// Lane merge: the least value, and among equal values the least index.
template <int W>
__attribute__((always_inline)) inline void merge(const double* value, const double* index,
                                                 double& best, double& arg) {
  for (int l = 0; l < W; ++l)
    if (value[l] < best || (value[l] == best && index[l] < arg)) {
      best = value[l];
      arg = index[l];
    }
}

// The columns the vector lanes leave, from `from` on: their indices exceed
// every lane's unless they are reps, so the tie rule applies only then.
template <bool Two, bool Rep>
__attribute__((always_inline)) inline void tail(const double* p, const double* t1, const double* t2,
                                                const double* rep, int from, int n, double& best,
                                                double& arg) {
  for (int c = from; c < n; ++c) {
    double x = p[c] + t1[c];
    if constexpr (Two) x += t2[c];
    const double i = Rep ? rep[c] : c;
    if (x < best || (Rep && x == best && i < arg)) {
      best = x;
      arg = i;
    }
  }
}

// The least of x and best lane by lane, x where x < best: a minimum
// instruction (SIMD128's pmin is exactly this) instead of a select. Where
// the lanes are equal it keeps best, which has the same value.
template <int W>
__attribute__((always_inline)) inline void keep_least(Vec<W> x, Vec<W>& best) {
#if defined(__wasm_simd128__)
  if constexpr (W == 2) {
    best = __builtin_wasm_pmin_f64x2(best, x);
    return;
  }
#endif
  best = x < best ? x : best;
}

// One compare-and-select step of a lane vector: with reps, an equal sum with
// a smaller rep also wins.
template <int W, bool Rep>
__attribute__((always_inline)) inline void select(Vec<W> x, Vec<W> i, Vec<W>& best, Vec<W>& arg) {
  auto less = x < best;
  if constexpr (Rep) less = less | ((x == best) & (i < arg));
  arg = less ? i : arg;
  keep_least<W>(x, best);
}

template <int W>
__attribute__((always_inline)) inline Vec<W> load(const double* p) {
  Vec<W> v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

template <int W>
__attribute__((always_inline)) inline Vec<W> splat(double x) {
  Vec<W> v;
  for (int l = 0; l < W; ++l) v[l] = x;
  return v;
}

// One vector against one row, kUnroll lane vectors side by side
// (independent chains of compare and select).
inline constexpr int kUnroll = 4;

template <int W, bool Two, bool Rep>
__attribute__((always_inline)) inline void scan(const double* p, const double* t1, const double* t2,
                                                const double* rep, int n, double* out,
                                                uint16_t* out_arg) {
  using Vd = Vec<W>;
  constexpr int kLanes = kUnroll * W;
  constexpr double inf = std::numeric_limits<double>::infinity();
  double lane_best[kLanes], lane_arg[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    lane_best[l] = inf;
    lane_arg[l] = Rep ? inf : 0;
  }
  Vd b[kUnroll], a[kUnroll], idx[kUnroll];
  __builtin_memcpy(b, lane_best, sizeof b);
  __builtin_memcpy(a, lane_arg, sizeof a);
  const Vd step = splat<W>(kLanes);
  for (int u = 0; u < kUnroll; ++u) {
    idx[u] = splat<W>(u * W);
    for (int l = 0; l < W; ++l) idx[u][l] += l;
  }
  const int body = n - n % kLanes;
  for (int c = 0; c < body; c += kLanes) {
    for (int u = 0; u < kUnroll; ++u) {
      Vd x = load<W>(p + c + u * W) + load<W>(t1 + c + u * W);
      if constexpr (Two) x += load<W>(t2 + c + u * W);
      select<W, Rep>(x, Rep ? load<W>(rep + c + u * W) : idx[u], b[u], a[u]);
      if constexpr (!Rep) idx[u] += step;
    }
  }
  __builtin_memcpy(lane_best, b, sizeof b);
  __builtin_memcpy(lane_arg, a, sizeof a);
  double best = inf, arg = Rep ? inf : 0;
  merge<kLanes>(lane_best, lane_arg, best, arg);
  tail<Two, Rep>(p, t1, t2, rep, body, n, best, arg);
  *out = best;
  *out_arg = static_cast<uint16_t>(arg == inf ? 0 : arg);  // every sum infinite: the first
}

// Two vectors against two rows at once, four least sums: each load serves
// two sums, and the four chains of compare and select run side by side.
// out[2 * i + j] and out_arg alike: vector i, row j.
template <int W, bool Two, bool Rep>
__attribute__((always_inline)) inline void scan22(const double* p0, const double* p1,
                                                  const double* const* t1, const double* const* t2,
                                                  const double* rep0, const double* rep1, int n,
                                                  double* out, uint16_t* out_arg) {
  using Vd = Vec<W>;
  constexpr double inf = std::numeric_limits<double>::infinity();
  Vd b[4], a[4];
  for (int k = 0; k < 4; ++k) {
    b[k] = splat<W>(inf);
    a[k] = splat<W>(Rep ? inf : 0);
  }
  Vd idx = splat<W>(0);
  for (int l = 0; l < W; ++l) idx[l] = l;
  const Vd step = splat<W>(W);
  const int body = n - n % W;
  for (int c = 0; c < body; c += W) {
    const Vd x0 = load<W>(p0 + c), x1 = load<W>(p1 + c);
    Vd r0 = load<W>(t1[0] + c), r1 = load<W>(t1[1] + c);
    Vd s[4] = {x0 + r0, x0 + r1, x1 + r0, x1 + r1};
    if constexpr (Two) {
      r0 = load<W>(t2[0] + c);
      r1 = load<W>(t2[1] + c);
      s[0] += r0;
      s[1] += r1;
      s[2] += r0;
      s[3] += r1;
    }
    if constexpr (Rep) {
      const Vd i0 = load<W>(rep0 + c), i1 = load<W>(rep1 + c);
      select<W, true>(s[0], i0, b[0], a[0]);
      select<W, true>(s[1], i0, b[1], a[1]);
      select<W, true>(s[2], i1, b[2], a[2]);
      select<W, true>(s[3], i1, b[3], a[3]);
    } else {
      for (int k = 0; k < 4; ++k) select<W, false>(s[k], idx, b[k], a[k]);
      idx += step;
    }
  }
  for (int k = 0; k < 4; ++k) {
    double lane_best[W], lane_arg[W];
    __builtin_memcpy(lane_best, &b[k], sizeof lane_best);
    __builtin_memcpy(lane_arg, &a[k], sizeof lane_arg);
    double best = inf, arg = Rep ? inf : 0;
    merge<W>(lane_best, lane_arg, best, arg);
    const double* p = k < 2 ? p0 : p1;
    const double* rep = k < 2 ? rep0 : rep1;
    tail<Two, Rep>(p, t1[k % 2], Two ? t2[k % 2] : nullptr, rep, body, n, best, arg);
    out[k] = best;
    out_arg[k] = static_cast<uint16_t>(arg == inf ? 0 : arg);
  }
}

template <int W, bool Two, bool Rep>
__attribute__((always_inline)) inline void block(const double* p, int nb, const DenseRows& rows,
                                                 int64_t r0, int64_t r1, const DenseOut& o) {
  const int n = rows.n;
  const int64_t n_rows = r1 - r0;
  const int64_t pair_rows = n_rows - n_rows % 2;
  const int pair_vectors = nb - nb % 2;
  auto rep_of = [&](int b) { return Rep ? o.rep + static_cast<size_t>(b) * n : nullptr; };
  auto at = [&](int b, int64_t r) { return b * o.vec_stride + r * o.row_stride; };
  for (int64_t r = 0; r < pair_rows; r += 2) {
    const double* t1[2] = {rows.t1[r0 + r], rows.t1[r0 + r + 1]};
    const double* t2[2] = {Two ? rows.t2[r0 + r] : nullptr, Two ? rows.t2[r0 + r + 1] : nullptr};
    for (int b = 0; b < pair_vectors; b += 2) {
      const double* pb = p + static_cast<size_t>(b) * n;
      double best[4];
      uint16_t arg[4];
      scan22<W, Two, Rep>(pb, pb + n, t1, t2, rep_of(b), rep_of(b + 1), n, best, arg);
      for (int k = 0; k < 4; ++k) {
        const int64_t e = at(b + k / 2, r + k % 2);
        o.out[e] = best[k];
        o.args[e] = arg[k];
      }
    }
  }
  // What the pairs leave: the last row, the last vector.
  for (int64_t r = 0; r < n_rows; ++r)
    for (int b = r < pair_rows ? pair_vectors : 0; b < nb; ++b) {
      const int64_t e = at(b, r);
      scan<W, Two, Rep>(p + static_cast<size_t>(b) * n, rows.t1[r0 + r],
                        Two ? rows.t2[r0 + r] : nullptr, rep_of(b), n, o.out + e, o.args + e);
    }
}

// Fills the least sums of rows [r0, r1) against the nb vectors at p (n
// apart) as `o` says.
template <int W>
__attribute__((always_inline)) inline void dense_block(const double* p, int nb,
                                                       const DenseRows& rows, int64_t r0,
                                                       int64_t r1, const DenseOut& o) {
  if (rows.t2) {
    if (o.rep) {
      block<W, true, true>(p, nb, rows, r0, r1, o);
    } else {
      block<W, true, false>(p, nb, rows, r0, r1, o);
    }
  } else if (o.rep) {
    block<W, false, true>(p, nb, rows, r0, r1, o);
  } else {
    block<W, false, false>(p, nb, rows, r0, r1, o);
  }
}

#if defined(__clang__)
#pragma clang diagnostic pop
#elif defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2"))) inline void dense_block_avx2(const double* p, int nb,
                                                             const DenseRows& rows, int64_t r0,
                                                             int64_t r1, const DenseOut& o) {
  dense_block<4>(p, nb, rows, r0, r1, o);
}
inline bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#endif

}  // namespace simd

// The least sums of rows [r0, r1) against the nb vectors at p (rows.n
// apart), as `o` says.
inline void dense_rows(const double* p, int nb, const DenseRows& rows, int64_t r0, int64_t r1,
                       const DenseOut& o) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (simd::has_avx2()) {
    simd::dense_block_avx2(p, nb, rows, r0, r1, o);
    return;
  }
#endif
  simd::dense_block<2>(p, nb, rows, r0, r1, o);
}

// One row: the least (p[c] + t1[c]) + t2[c] (t2 may be null) over n columns
// into *out and its index (through rep, may be null) into *arg.
inline void dense_row(const double* p, const double* t1, const double* t2, const double* rep, int n,
                      double* out, uint16_t* arg) {
  const double* r1[1] = {t1};
  const double* r2[1] = {t2};
  DenseRows rows{r1, t2 ? r2 : nullptr, n};
  dense_rows(p, 1, rows, 0, 1, DenseOut{out, arg, 0, 1, rep});
}

}  // namespace pase::detail
