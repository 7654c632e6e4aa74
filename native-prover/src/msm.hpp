// Multithreaded Pippenger MSM over fixed bases: precomputed shifted copies of the bases (built once per
// proving key) and bucket sums accumulated in affine coordinates with batched inversions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "curve.hpp"
#include "pool.hpp"

namespace np {

inline bool scalarIsZero(const U256& s) { return (s.v[0] | s.v[1] | s.v[2] | s.v[3]) == 0; }
inline bool scalarIsOne(const U256& s) { return s.v[0] == 1 && (s.v[1] | s.v[2] | s.v[3]) == 0; }

inline uint32_t scalarDigit(const U256& s, unsigned offset, unsigned c) {
  unsigned limb = offset >> 6, sh = offset & 63;
  if (limb >= 4) return 0;
  u64 val = s.v[limb] >> sh;
  if (sh + c > 64 && limb < 3) val |= s.v[limb + 1] << (64 - sh);
  return (uint32_t)(val & ((1ULL << c) - 1));
}

// Batch inversion (Montgomery's trick): out[i] = 1 / in[i] with one field inversion; inputs must be non-zero.
template <class F>
void batchInverse(const F* in, F* out, size_t n) {
  if (n == 0) return;
  out[0] = in[0];
  for (size_t i = 1; i < n; ++i) out[i] = F::mul(out[i - 1], in[i]);
  F inv = F::inv(out[n - 1]);
  for (size_t i = n - 1; i > 0; --i) {
    F t = F::mul(inv, out[i - 1]);
    inv = F::mul(inv, in[i]);
    out[i] = t;
  }
  out[0] = inv;
}

// Fq2 through the norm: 1/a = conj(a) / (a0^2 + a1^2), so the shared inversion and its products run
// in Fq (7 Fq multiplications per element instead of 9). The norm of a non-zero element is non-zero.
inline void batchInverse(const Fq2* in, Fq2* out, size_t n) {
  if (n == 0) return;
  std::vector<Fq> norm(n), normInv(n);
  for (size_t i = 0; i < n; ++i) norm[i] = Fq::add(Fq::sqr(in[i].c0), Fq::sqr(in[i].c1));
  batchInverse(norm.data(), normInv.data(), n);
  for (size_t i = 0; i < n; ++i) {
    out[i] = Fq2{Fq::mul(in[i].c0, normInv[i]), Fq::neg(Fq::mul(in[i].c1, normInv[i]))};
  }
}

// Jacobian points to affine with one shared inversion.
template <class F>
void batchToAffine(const Jacobian<F>* in, Affine<F>* out, size_t n) {
  std::vector<F> z, zi;
  z.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!in[i].isZero()) z.push_back(in[i].z);
  }
  zi.resize(z.size());
  batchInverse(z.data(), zi.data(), z.size());
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    if (in[i].isZero()) {
      out[i] = Affine<F>{F::zero(), F::zero()};
      continue;
    }
    F inv = zi[k++];
    F inv2 = F::sqr(inv);
    out[i] = Affine<F>{F::mul(in[i].x, inv2), F::mul(in[i].y, F::mul(inv2, inv))};
  }
}

/**
 * The bases of one MSM with `copies` shifted copies: copy j holds 2^(c * stride * j) times every base, so a
 * scalar's signed c-bit digits split into `copies` groups of `stride` windows each and all groups share
 * one set of buckets per window. stride == nWindows keeps only the bases (plain Pippenger).
 */
template <class F>
struct MsmTable {
  unsigned c = 0;
  unsigned nWindows = 0;
  unsigned stride = 0;
  unsigned copies = 0;
  size_t n = 0;
  std::vector<Affine<F>> points;  // copies * n, copy-major

  const Affine<F>* base() const { return points.data(); }
  size_t bytes() const { return points.size() * sizeof(Affine<F>); }
};

inline unsigned windowsFor(unsigned c) { return 255 / c + 1; }  // signed digits need a bit of headroom
// Signed digits reach +-2^(c-1) and are stored as int16_t.
constexpr unsigned kMaxWindowBits = 15;

struct TableShape {
  unsigned c, stride, copies;
};

// Relative costs in field multiplications: an affine bucket addition with its share of the batched
// inversion (~6) plus moving the point (~1), against ~27 for folding one bucket into the window sum;
// building the copies (~10 per doubling) is charged as if spread over 64 proofs with the key.
inline TableShape planTable(size_t n, size_t pointBytes, size_t budgetBytes, unsigned threads) {
  TableShape best{8, windowsFor(8), 1};
  double bestCost = -1;
  const size_t maxCopies = std::max<size_t>(1, budgetBytes / std::max<size_t>(1, n * pointBytes));
  for (unsigned c = 4; c <= kMaxWindowBits; ++c) {
    const unsigned nW = windowsFor(c);
    for (unsigned want = 1; want <= std::min<size_t>(nW, maxCopies); ++want) {
      const unsigned stride = (nW + want - 1) / want;
      const unsigned copies = (nW + stride - 1) / stride;
      // Chunks as msm() splits the work: each one folds its own buckets.
      const double chunks = (double)((std::max(1u, threads) + stride - 1) / stride);
      const double cost =
          (double)stride * ((double)n * copies * 7.0 + chunks * (double)((size_t)1 << (c - 1)) * 27.0) +
          (double)n * (copies - 1) * c * stride * 10.0 / 64.0;
      if (bestCost < 0 || cost < bestCost) {
        bestCost = cost;
        best = TableShape{c, stride, copies};
      }
    }
  }
  return best;
}

// Builds the table for `shape`; copy 0 is the bases themselves.
template <class F>
MsmTable<F> buildTable(std::vector<Affine<F>>&& bases, TableShape shape, unsigned threads) {
  using J = Jacobian<F>;
  MsmTable<F> t;
  t.c = shape.c;
  t.nWindows = windowsFor(shape.c);
  t.stride = shape.stride;
  t.copies = shape.copies;
  t.n = bases.size();
  const size_t n = t.n;
  if (t.copies == 1) {
    t.points = std::move(bases);
    return t;
  }
  t.points.resize(n * t.copies);
  std::copy(bases.begin(), bases.end(), t.points.begin());
  std::vector<Affine<F>>().swap(bases);
  const unsigned shift = t.c * t.stride;
  parallelFor(n, threads, 256, [&](size_t lo, size_t hi) {
    std::vector<J> tmp(hi - lo);
    for (unsigned j = 1; j < t.copies; ++j) {
      const Affine<F>* prev = t.points.data() + (j - 1) * n;
      for (size_t i = lo; i < hi; ++i) {
        J p = J::fromAffine(prev[i]);
        for (unsigned k = 0; k < shift; ++k) p = J::dbl(p);
        tmp[i - lo] = p;
      }
      batchToAffine(tmp.data(), t.points.data() + j * n + lo, hi - lo);
    }
  });
  return t;
}

namespace detail {

// Sums every bucket's points in place: pairs are added in rounds, and each round shares one inversion
// across all buckets. Afterwards len[b] is 0 or 1 and the bucket's sum sits at pts[start[b]].
template <class F>
void reduceBuckets(Affine<F>* pts, const uint32_t* start, uint32_t* len, size_t nBuckets) {
  std::vector<uint32_t> active;
  for (size_t b = 0; b < nBuckets; ++b) {
    if (len[b] >= 2) active.push_back((uint32_t)b);
  }
  std::vector<F> den, inv;
  std::vector<uint8_t> kind;  // 0 add, 1 double, 2 sum is the point at infinity
  while (!active.empty()) {
    size_t nPairs = 0;
    for (uint32_t b : active) nPairs += len[b] / 2;
    den.resize(nPairs);
    inv.resize(nPairs);
    kind.resize(nPairs);
    size_t p = 0;
    for (uint32_t b : active) {
      const Affine<F>* s = pts + start[b];
      for (uint32_t i = 0; i + 1 < len[b]; i += 2, ++p) {
        const Affine<F>& P = s[i];
        const Affine<F>& Q = s[i + 1];
        F d = F::sub(Q.x, P.x);
        if (!d.isZero()) {
          den[p] = d;
          kind[p] = 0;
        } else if (P.y == Q.y && !P.y.isZero()) {
          den[p] = F::dbl(P.y);
          kind[p] = 1;
        } else {
          den[p] = F::one();
          kind[p] = 2;
        }
      }
    }
    batchInverse(den.data(), inv.data(), nPairs);
    p = 0;
    bool anyInfinity = false;
    for (uint32_t b : active) {
      Affine<F>* s = pts + start[b];
      const uint32_t half = len[b] / 2;
      // Pair i writes slot i after reading slots 2i and 2i+1: a forward pass never clobbers an unread pair.
      for (uint32_t i = 0; i < half; ++i, ++p) {
        const Affine<F> P = s[2 * i];
        const Affine<F>& Q = s[2 * i + 1];
        if (kind[p] == 2) {
          s[i] = Affine<F>{F::zero(), F::zero()};
          anyInfinity = true;
          continue;
        }
        F lambda;
        if (kind[p] == 0) {
          lambda = F::mul(F::sub(Q.y, P.y), inv[p]);
        } else {
          F xx = F::sqr(P.x);
          lambda = F::mul(F::add(F::dbl(xx), xx), inv[p]);
        }
        F x3 = F::sub(F::sub(F::sqr(lambda), P.x), Q.x);
        F y3 = F::sub(F::mul(lambda, F::sub(P.x, x3)), P.y);
        s[i] = Affine<F>{x3, y3};
      }
      if (len[b] & 1) s[half] = s[len[b] - 1];
      len[b] = half + (len[b] & 1);
    }
    if (anyInfinity) {
      for (uint32_t b : active) {
        Affine<F>* s = pts + start[b];
        uint32_t k = 0;
        for (uint32_t i = 0; i < len[b]; ++i) {
          if (!s[i].isZero()) s[k++] = s[i];
        }
        len[b] = k;
      }
    }
    size_t keep = 0;
    for (uint32_t b : active) {
      if (len[b] >= 2) active[keep++] = b;
    }
    active.resize(keep);
  }
}

}  // namespace detail

// sum_i scalars[i] * bases[i] over the table's bases; scalars are standard-form integers below 2^255.
template <class F>
Jacobian<F> msm(const MsmTable<F>& table, const U256* scalars, size_t n, unsigned threads) {
  using J = Jacobian<F>;
  if (n == 0) return J::zero();
  if (n > table.n) throw std::length_error("msm: more scalars than bases");
  const Affine<F>* bases = table.base();

  // Zero scalars and bases at infinity contribute nothing: drop them before the windowed pass.
  size_t nClassify = std::max<size_t>(1, std::min<size_t>((size_t)threads * 4, n / 4096));
  size_t perC = (n + nClassify - 1) / nClassify;
  std::vector<std::vector<uint32_t>> lists(nClassify);
  ThreadPool::instance().run(nClassify, threads, [&](size_t ch) {
    size_t b = ch * perC, e = std::min(n, b + perC);
    auto& list = lists[ch];
    for (size_t i = b; i < e; ++i) {
      if (!scalarIsZero(scalars[i]) && !bases[i].isZero()) list.push_back((uint32_t)i);
    }
  });
  std::vector<uint32_t> idx;
  {
    size_t total = 0;
    for (auto& l : lists) total += l.size();
    idx.reserve(total);
    for (auto& l : lists) idx.insert(idx.end(), l.begin(), l.end());
  }
  const size_t m = idx.size();
  if (m == 0) return J::zero();

  const unsigned c = table.c, nWindows = table.nWindows, stride = table.stride, copies = table.copies;
  const size_t nBuckets = (size_t)1 << (c - 1);

  // Signed digits in [-2^(c-1), 2^(c-1)]: half the buckets, and negating a point is free.
  std::vector<int16_t> digits(m * nWindows);
  parallelFor(m, threads, 1024, [&](size_t lo, size_t hi) {
    for (size_t k = lo; k < hi; ++k) {
      const U256& s = scalars[idx[k]];
      int32_t carry = 0;
      for (unsigned w = 0; w < nWindows; ++w) {
        int32_t d = (int32_t)scalarDigit(s, w * c, c) + carry;
        carry = d > (int32_t)nBuckets ? 1 : 0;
        if (carry) d -= (int32_t)1 << c;
        digits[k * nWindows + w] = (int16_t)d;
      }
    }
  });

  // Tasks: (chunk of the m * copies virtual points, window within a copy's stride).
  const size_t virt = m * copies;
  size_t nChunks = std::max<size_t>(1, ((size_t)threads + stride - 1) / stride);
  nChunks = std::min(nChunks, std::max<size_t>(1, virt / 512));
  const size_t per = (virt + nChunks - 1) / nChunks;
  nChunks = (virt + per - 1) / per;
  std::vector<J> partial(nChunks * stride, J::zero());
  ThreadPool::instance().run(nChunks * stride, threads, [&](size_t task) {
    const size_t chunk = task / stride;
    const unsigned w = (unsigned)(task % stride);
    const size_t vb = chunk * per, ve = std::min(virt, vb + per);
    std::vector<uint32_t> start(nBuckets + 1, 0), len(nBuckets, 0);
    // Virtual point v is copy v / m of scalar v % m; its digit for this task is window copy*stride + w.
    auto forEachDigit = [&](auto&& fn) {
      size_t copy = vb / m, k = vb % m;
      for (size_t v = vb; v < ve; ++v) {
        const unsigned win = (unsigned)copy * stride + w;
        if (win < nWindows) {
          const int32_t d = digits[k * nWindows + win];
          if (d != 0) fn(copy, k, d);
        }
        if (++k == m) {
          k = 0;
          ++copy;
        }
      }
    };
    forEachDigit([&](size_t, size_t, int32_t d) { len[(d > 0 ? d : -d) - 1]++; });
    uint32_t total = 0;
    for (size_t b = 0; b < nBuckets; ++b) {
      start[b] = total;
      total += len[b];
    }
    start[nBuckets] = total;
    std::vector<Affine<F>> pts(total);
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    forEachDigit([&](size_t copy, size_t k, int32_t d) {
      const Affine<F>& p = bases[copy * table.n + idx[k]];
      if (d > 0) {
        pts[fill[d - 1]++] = p;
      } else {
        pts[fill[-d - 1]++] = Affine<F>{p.x, F::neg(p.y)};
      }
    });
    detail::reduceBuckets(pts.data(), start.data(), len.data(), nBuckets);
    J running = J::zero(), sum = J::zero();
    for (size_t j = nBuckets; j-- > 0;) {
      if (len[j]) running = J::addAffine(running, pts[start[j]]);
      sum = J::add(sum, running);
    }
    partial[chunk * stride + w] = sum;
  });

  J acc = J::zero();
  for (unsigned w = stride; w-- > 0;) {
    for (unsigned k = 0; k < c; ++k) acc = J::dbl(acc);
    for (size_t chunk = 0; chunk < nChunks; ++chunk) acc = J::add(acc, partial[chunk * stride + w]);
  }
  return acc;
}

}  // namespace np
