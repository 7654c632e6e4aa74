// Multithreaded Pippenger multi-scalar multiplication with zero/one-scalar fast paths.
#pragma once

#include <cmath>
#include <vector>

#include "curve.hpp"
#include "pool.hpp"

namespace np {

inline bool scalarIsZero(const U256& s) { return (s.v[0] | s.v[1] | s.v[2] | s.v[3]) == 0; }
inline bool scalarIsOne(const U256& s) { return s.v[0] == 1 && (s.v[1] | s.v[2] | s.v[3]) == 0; }

inline unsigned windowBits(size_t n) {
  if (n < 32) return 3;
  unsigned c = (unsigned)std::log((double)n) + 2;  // ~ln(n) balances bucket adds against reductions
  return c > 16 ? 16 : c;
}

inline uint32_t scalarDigit(const U256& s, unsigned offset, unsigned c) {
  unsigned limb = offset >> 6, sh = offset & 63;
  if (limb >= 4) return 0;
  u64 val = s.v[limb] >> sh;
  if (sh + c > 64 && limb < 3) val |= s.v[limb + 1] << (64 - sh);
  return (uint32_t)(val & ((1ULL << c) - 1));
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
  ThreadPool::instance().run(nChunksClassify, threads, [&](size_t c) {
    size_t b = c * perC, e = std::min(n, b + perC);
    J acc = J::zero();
    auto& list = others[c];
    for (size_t i = b; i < e; ++i) {
      const U256& s = scalars[i];
      if (scalarIsZero(s) || bases[i].isZero()) continue;
      if (scalarIsOne(s)) {
        acc = J::addAffine(acc, bases[i]);
      } else {
        list.push_back((uint32_t)i);
      }
    }
    ones[c] = acc;
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
  size_t m = idx.size();
  if (m == 0) return result;

  const unsigned c = windowBits(m);
  const unsigned nWindows = (254 + c - 1) / c;
  const size_t nBuckets = ((size_t)1 << c) - 1;
  size_t nChunks = ((size_t)threads * 2 + nWindows - 1) / nWindows;
  nChunks = std::max<size_t>(1, std::min<size_t>(nChunks, m >> c));
  const size_t per = (m + nChunks - 1) / nChunks;
  nChunks = (m + per - 1) / per;

  std::vector<J> partial(nChunks * nWindows, J::zero());
  ThreadPool::instance().run(nChunks * nWindows, threads, [&](size_t task) {
    size_t chunk = task / nWindows;
    unsigned w = (unsigned)(task % nWindows);
    size_t b = chunk * per, e = std::min(m, b + per);
    std::vector<J> buckets(nBuckets, J::zero());
    unsigned offset = w * c;
    for (size_t k = b; k < e; ++k) {
      uint32_t i = idx[k];
      uint32_t d = scalarDigit(scalars[i], offset, c);
      if (d) buckets[d - 1] = J::addAffine(buckets[d - 1], bases[i]);
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
