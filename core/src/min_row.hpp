// The innermost loop of the dynamic program on rows read in a stream: for
// each of `nb` vectors P_b and each of `rows` rows (one or two row terms
// t1_r, t2_r), the least sum (P_b[c] + t1_r[c]) + t2_r[c] over the nv
// configurations c and the first c that reaches it. The sums are formed as
// the scalar loop forms them, so the values and the indices are those of
//
//   for c: if (sum(c) < best) { best = sum(c); arg = c; }
//
// bit for bit. Every row is read once per block of vectors, in chunks that
// stay in the first-level cache with the vectors' chunks, so that a block of
// outer states shares each pass over the rows (a min-plus product of the
// block by the rows, tiled as a matrix product is). Written with the
// compiler's vector types (GCC, Clang): each lane keeps its own least sum and
// the first index that reached it, and the lanes are merged by value, then
// by index. On x86-64 a clone for AVX2 is chosen at run time when the
// processor has it; WebAssembly gets SIMD128 with -msimd128. The result is
// the same everywhere. core/docs/performance.md, "Dense rows".
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace pase::detail {

struct DenseRows {
  const double* const* t1 = nullptr;  // rows[r]: the first row term's row r
  const double* const* t2 = nullptr;  // the second's, or null for one term
  int nv = 0;
};

namespace simd {

using V2 = double __attribute__((vector_size(16)));
using V4 = double __attribute__((vector_size(32)));

// The least sum over one row and its first index. `W` doubles a vector,
// kUnroll vectors side by side (independent chains of compare and select):
// each lane keeps its least sum and the first index (as a double, exact
// below 2^53) that reached it; the lanes are merged by value, then by index.
inline constexpr int kUnroll = 4;

template <int W, bool Two>
__attribute__((always_inline)) inline void scan(const double* p, const double* t1,
                                                const double* t2, int nv, double* out,
                                                uint16_t* out_arg) {
  using Vd = std::conditional_t<W == 4, V4, V2>;
  constexpr int kLanes = kUnroll * W;
  constexpr double inf = std::numeric_limits<double>::infinity();
  double init_best[kLanes], init_arg[kLanes], init_idx[kLanes], init_step[W];
  for (int l = 0; l < kLanes; ++l) {
    init_best[l] = inf;
    init_arg[l] = 0;
    init_idx[l] = l;
  }
  for (int l = 0; l < W; ++l) init_step[l] = kLanes;
  Vd b[kUnroll], a[kUnroll], idx[kUnroll], step;
  __builtin_memcpy(b, init_best, sizeof b);
  __builtin_memcpy(a, init_arg, sizeof a);
  __builtin_memcpy(idx, init_idx, sizeof idx);
  __builtin_memcpy(&step, init_step, sizeof step);
  const int body = nv - nv % kLanes;
  for (int c = 0; c < body; c += kLanes) {
    for (int u = 0; u < kUnroll; ++u) {
      Vd x, t;
      __builtin_memcpy(&x, p + c + u * W, sizeof x);
      __builtin_memcpy(&t, t1 + c + u * W, sizeof t);
      x += t;
      if constexpr (Two) {
        __builtin_memcpy(&t, t2 + c + u * W, sizeof t);
        x += t;
      }
      auto less = x < b[u];
      b[u] = less ? x : b[u];
      a[u] = less ? idx[u] : a[u];
      idx[u] += step;
    }
  }
  __builtin_memcpy(init_best, b, sizeof b);
  __builtin_memcpy(init_arg, a, sizeof a);
  double value = inf;
  int arg = 0;
  for (int l = 0; l < kLanes; ++l) {
    int k = static_cast<int>(init_arg[l]);
    if (init_best[l] < value || (init_best[l] == value && k < arg)) {
      value = init_best[l];
      arg = k;
    }
  }
  // The tail: indices above every lane's, so only a smaller sum wins.
  for (int c = body; c < nv; ++c) {
    double x = p[c] + t1[c];
    if constexpr (Two) x += t2[c];
    if (x < value) {
      value = x;
      arg = c;
    }
  }
  *out = value;
  *out_arg = static_cast<uint16_t>(arg);
}

// Two vectors against two rows at once, four least sums: each load serves
// two sums, and the four chains of compare and select run side by side.
// out[2 * i + j] and arg alike: vector i, row j.
template <int W, bool Two>
__attribute__((always_inline)) inline void scan22(const double* p0, const double* p1,
                                                  const double* const* t1,
                                                  const double* const* t2, int nv, double* out,
                                                  uint16_t* out_arg) {
  using Vd = std::conditional_t<W == 4, V4, V2>;
  constexpr double inf = std::numeric_limits<double>::infinity();
  double init_best[W], init_idx[W], init_step[W];
  for (int l = 0; l < W; ++l) {
    init_best[l] = inf;
    init_idx[l] = l;
    init_step[l] = W;
  }
  Vd b[4], a[4], idx, step;
  for (int k = 0; k < 4; ++k) __builtin_memcpy(&b[k], init_best, sizeof b[k]);
  __builtin_memcpy(&idx, init_idx, sizeof idx);
  __builtin_memcpy(&step, init_step, sizeof step);
  for (int k = 0; k < 4; ++k) a[k] = idx - idx;
  const int body = nv - nv % W;
  for (int c = 0; c < body; c += W) {
    Vd x0, x1, r0, r1;
    __builtin_memcpy(&x0, p0 + c, sizeof x0);
    __builtin_memcpy(&x1, p1 + c, sizeof x1);
    __builtin_memcpy(&r0, t1[0] + c, sizeof r0);
    __builtin_memcpy(&r1, t1[1] + c, sizeof r1);
    Vd s[4] = {x0 + r0, x0 + r1, x1 + r0, x1 + r1};
    if constexpr (Two) {
      __builtin_memcpy(&r0, t2[0] + c, sizeof r0);
      __builtin_memcpy(&r1, t2[1] + c, sizeof r1);
      s[0] += r0;
      s[1] += r1;
      s[2] += r0;
      s[3] += r1;
    }
    for (int k = 0; k < 4; ++k) {
      auto less = s[k] < b[k];
      b[k] = less ? s[k] : b[k];
      a[k] = less ? idx : a[k];
    }
    idx += step;
  }
  for (int k = 0; k < 4; ++k) {
    double lane_best[W], lane_arg[W];
    __builtin_memcpy(lane_best, &b[k], sizeof lane_best);
    __builtin_memcpy(lane_arg, &a[k], sizeof lane_arg);
    double value = inf;
    int arg = 0;
    for (int l = 0; l < W; ++l) {
      int i = static_cast<int>(lane_arg[l]);
      if (lane_best[l] < value || (lane_best[l] == value && i < arg)) {
        value = lane_best[l];
        arg = i;
      }
    }
    const double* p = k < 2 ? p0 : p1;
    const double* r1 = t1[k % 2];
    const double* r2 = Two ? t2[k % 2] : nullptr;
    for (int c = body; c < nv; ++c) {
      double x = p[c] + r1[c];
      if constexpr (Two) x += r2[c];
      if (x < value) {
        value = x;
        arg = c;
      }
    }
    out[k] = value;
    out_arg[k] = static_cast<uint16_t>(arg);
  }
}

// Fills out[b * (r1 - r0) + (r - r0)] and args alike for r in [r0, r1), for
// the nb vectors at p + b * nv: each row is read from memory once for the
// whole block and then from the cache, two rows by two vectors at a time.
template <int W>
__attribute__((always_inline)) inline void dense_block(const double* p, int nb,
                                                       const DenseRows& rows, int64_t r0,
                                                       int64_t r1, double* out, uint16_t* args) {
  const int nv = rows.nv;
  const int64_t n_rows = r1 - r0;
  const int64_t pair_rows = n_rows - n_rows % 2;
  const int pair_vectors = nb - nb % 2;
  for (int64_t r = 0; r < pair_rows; r += 2) {
    const double* t1[2] = {rows.t1[r0 + r], rows.t1[r0 + r + 1]};
    const double* t2[2] = {rows.t2 ? rows.t2[r0 + r] : nullptr,
                           rows.t2 ? rows.t2[r0 + r + 1] : nullptr};
    for (int b = 0; b < pair_vectors; b += 2) {
      const double* pb = p + static_cast<size_t>(b) * nv;
      double o[4];
      uint16_t a[4];
      if (rows.t2) {
        scan22<W, true>(pb, pb + nv, t1, t2, nv, o, a);
      } else {
        scan22<W, false>(pb, pb + nv, t1, t2, nv, o, a);
      }
      for (int k = 0; k < 4; ++k) {
        const int64_t e = (b + k / 2) * n_rows + r + k % 2;
        out[e] = o[k];
        args[e] = a[k];
      }
    }
  }
  // What the pairs left: the last row, the last vector.
  for (int64_t r = 0; r < n_rows; ++r) {
    if (r < pair_rows && pair_vectors == nb) continue;
    const double* t1 = rows.t1[r0 + r];
    const double* t2 = rows.t2 ? rows.t2[r0 + r] : nullptr;
    for (int b = r < pair_rows ? pair_vectors : 0; b < nb; ++b) {
      const double* pb = p + static_cast<size_t>(b) * nv;
      if (t2) {
        scan<W, true>(pb, t1, t2, nv, out + b * n_rows + r, args + b * n_rows + r);
      } else {
        scan<W, false>(pb, t1, nullptr, nv, out + b * n_rows + r, args + b * n_rows + r);
      }
    }
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2"))) inline void dense_block_avx2(const double* p, int nb,
                                                             const DenseRows& rows, int64_t r0,
                                                             int64_t r1, double* out,
                                                             uint16_t* args) {
  dense_block<4>(p, nb, rows, r0, r1, out, args);
}
__attribute__((target("avx2"))) inline void scan_avx2(const double* p, const double* t1,
                                                      const double* t2, int nv, double* out,
                                                      uint16_t* arg) {
  if (t2) {
    scan<4, true>(p, t1, t2, nv, out, arg);
  } else {
    scan<4, false>(p, t1, nullptr, nv, out, arg);
  }
}
inline bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#endif

}  // namespace simd

// The least sums of rows [r0, r1) against nb vectors (at p, nv apart) into
// out[b * (r1 - r0) + (r - r0)] and their first arg-mins into args.
inline void dense_rows(const double* p, int nb, const DenseRows& rows, int64_t r0, int64_t r1,
                       double* out, uint16_t* args) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (simd::has_avx2()) {
    simd::dense_block_avx2(p, nb, rows, r0, r1, out, args);
    return;
  }
#endif
  simd::dense_block<2>(p, nb, rows, r0, r1, out, args);
}

}  // namespace pase::detail

namespace pase::detail {

// One row: the least (p[c] + t1[c]) + t2[c] (t2 may be null) into *out and
// its first arg-min into *arg.
inline void dense_row(const double* p, const double* t1, const double* t2, int nv, double* out,
                      uint16_t* arg) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (simd::has_avx2()) {
    simd::scan_avx2(p, t1, t2, nv, out, arg);
    return;
  }
#endif
  if (t2) {
    simd::scan<2, true>(p, t1, t2, nv, out, arg);
  } else {
    simd::scan<2, false>(p, t1, nullptr, nv, out, arg);
  }
}

}  // namespace pase::detail
