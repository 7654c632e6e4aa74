// Multithreaded Pippenger multi-scalar multiplication with zero/one-scalar fast paths.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
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

struct MsmPlan {
  unsigned c;         // window bits
  unsigned nWindows;  // signed digits need one extra bit of headroom
  size_t nChunks;     // point ranges processed independently per window
};

// Cost model in mixed-addition units: every point costs one addition per window, and every bucket of
// every (chunk, window) task costs two full additions (~1.5 mixed each) to reduce.
inline MsmPlan planMsm(size_t m, unsigned threads) {
  MsmPlan best{2, 128, 1};
  double bestCost = -1;
  for (unsigned c = 2; c <= 15; ++c) {
    unsigned nWindows = 255 / c + 1;
    size_t nChunks = ((size_t)threads * 2 + nWindows - 1) / nWindows;
    nChunks = std::max<size_t>(1, std::min<size_t>(nChunks, m >> (c - 1)));
    double perTask = (double)m / nChunks + 3.0 * (double)((size_t)1 << (c - 1));
    double tasks = (double)nChunks * nWindows;
    double rounds = std::ceil(tasks / threads);
    double cost = rounds * perTask + (double)nWindows * c;  // + the final doublings
    if (bestCost < 0 || cost < bestCost) {
      bestCost = cost;
      best = MsmPlan{c, nWindows, nChunks};
    }
  }
  return best;
}

// sum_i scalars[i] * bases[i]; scalars are standard-form integers below the group order.
template <class F>
Jacobian<F> msm(const Affine<F>* bases, const U256* scalars, size_t n, unsigned threads) {
  using J = Jacobian<F>;
  if (n == 0) return J::zero();

  // Witnesses are dominated by 0/1 signals: those skip the windowed pass entirely.
  size_t nChunksClassify = std::max<size_t>(1, std::min<size_t>((size_t)threads * 4, n / 4096));
  size_t perC = (n + nChunksClassify - 1) / nChunksClassify;
  std::vector<std::vector<uint32_t>> others(nChunksClassify);
  std::vector<J> ones(nChunksClassify, J::zero());
  ThreadPool::instance().run(nChunksClassify, threads, [&](size_t ch) {
    size_t b = ch * perC, e = std::min(n, b + perC);
    J sumOnes = J::zero();
    auto& list = others[ch];
    for (size_t i = b; i < e; ++i) {
      const U256& s = scalars[i];
      if (scalarIsZero(s) || bases[i].isZero()) continue;
      if (scalarIsOne(s)) {
        sumOnes = J::addAffine(sumOnes, bases[i]);
      } else {
        list.push_back((uint32_t)i);
      }
    }
    ones[ch] = sumOnes;
  });
  J result = J::zero();
  for (auto& o : ones) result = J::add(result, o);

  std::vector<uint32_t> idx;
  {
    size_t total = 0;
    for (auto& l : others) total += l.size();
    idx.reserve(total);
    for (auto& l : others) idx.insert(idx.end(), l.begin(), l.end());
  }
  const size_t m = idx.size();
  if (m == 0) return result;

  const MsmPlan plan = planMsm(m, threads);
  const unsigned c = plan.c, nWindows = plan.nWindows;
  const size_t nBuckets = (size_t)1 << (c - 1);
  const size_t per = (m + plan.nChunks - 1) / plan.nChunks;
  const size_t nChunks = (m + per - 1) / per;

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

  std::vector<J> partial(nChunks * nWindows, J::zero());
  ThreadPool::instance().run(nChunks * nWindows, threads, [&](size_t task) {
    size_t chunk = task / nWindows;
    unsigned w = (unsigned)(task % nWindows);
    size_t b = chunk * per, e = std::min(m, b + per);
    std::vector<J> buckets(nBuckets, J::zero());
    for (size_t k = b; k < e; ++k) {
      int32_t d = digits[k * nWindows + w];
      if (d > 0) {
        buckets[d - 1] = J::addAffine(buckets[d - 1], bases[idx[k]]);
      } else if (d < 0) {
        const Affine<F>& p = bases[idx[k]];
        buckets[-d - 1] = J::addAffine(buckets[-d - 1], Affine<F>{p.x, F::neg(p.y)});
      }
    }
    J running = J::zero(), sum = J::zero();
    for (size_t j = nBuckets; j-- > 0;) {
      running = J::add(running, buckets[j]);
      sum = J::add(sum, running);
    }
    partial[chunk * nWindows + w] = sum;
  });

  J acc = J::zero();
  for (unsigned w = nWindows; w-- > 0;) {
    for (unsigned k = 0; k < c; ++k) acc = J::dbl(acc);
    for (size_t chunk = 0; chunk < nChunks; ++chunk) acc = J::add(acc, partial[chunk * nWindows + w]);
  }
  return J::add(result, acc);
}

}  // namespace np
