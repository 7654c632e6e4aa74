// Radix-2 FFT over Fr with the same roots of unity ffjavascript uses, so H matches snarkjs's hExps.
#pragma once

#include <vector>

#include "field.hpp"
#include "pool.hpp"

namespace np {

struct FrDomainConstants {
  unsigned s;                // 2-adicity of r - 1
  std::vector<Fr> rootOf2k;  // rootOf2k[k] = primitive 2^k-th root of unity (ffjavascript's Fr.w[k])
  Fr shift;                  // nqr^2, ffjavascript's Fr.shift
};

inline const FrDomainConstants& frDomain() {
  static const FrDomainConstants dc = [] {
    FrDomainConstants d;
    U256 rm1{{FrTag::P[0] - 1, FrTag::P[1], FrTag::P[2], FrTag::P[3]}};
    U256 half = rm1;
    for (int i = 0; i < 4; ++i) half.v[i] = (rm1.v[i] >> 1) | (i < 3 ? rm1.v[i + 1] << 63 : 0);
    // Smallest quadratic non-residue starting at 2, exactly as ffjavascript picks it.
    Fr nqr = Fr::fromU64(2);
    Fr minusOne = Fr::neg(Fr::one());
    while (Fr::pow(nqr, half) != minusOne) nqr = Fr::add(nqr, Fr::one());
    U256 t = rm1;
    unsigned s = 0;
    while ((t.v[0] & 1) == 0) {
      for (int i = 0; i < 4; ++i) t.v[i] = (t.v[i] >> 1) | (i < 3 ? t.v[i + 1] << 63 : 0);
      ++s;
    }
    d.s = s;
    d.rootOf2k.resize(s + 1);
    d.rootOf2k[s] = Fr::pow(nqr, t);
    for (unsigned k = s; k-- > 0;) d.rootOf2k[k] = Fr::sqr(d.rootOf2k[k + 1]);
    d.shift = Fr::sqr(nqr);
    return d;
  }();
  return dc;
}

inline unsigned log2Exact(size_t n) {
  unsigned k = 0;
  while (((size_t)1 << k) < n) ++k;
  return k;
}

// In-place forward DFT: a[i] <- sum_j a[j] * w^(ij); roots holds w^0..w^(n/2-1).
inline void fft(Fr* a, size_t n, const std::vector<Fr>& roots, unsigned threads) {
  if (n <= 1) return;
  unsigned bits = log2Exact(n);
  // Chunks of at least 2^12 swaps and 2^10 butterflies (tens of microseconds each): a 2^16 domain
  // still splits 16 and 32 ways, so no level waits on fewer threads than a 16-core host has.
  parallelFor(n, threads, 1 << 12, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      size_t j = 0;
      for (unsigned k = 0; k < bits; ++k) j |= ((i >> k) & 1) << (bits - 1 - k);
      if (i < j) std::swap(a[i], a[j]);
    }
  });
  for (size_t len = 2; len <= n; len <<= 1) {
    size_t half = len >> 1;
    unsigned halfBits = log2Exact(half);
    size_t step = n / len;
    parallelFor(n / 2, threads, 1 << 10, [&](size_t b, size_t e) {
      for (size_t k = b; k < e; ++k) {
        size_t blk = k >> halfBits, j = k & (half - 1);
        size_t i0 = (blk << (halfBits + 1)) + j, i1 = i0 + half;
        Fr v = Fr::mul(a[i1], roots[j * step]);
        Fr u = a[i0];
        a[i0] = Fr::add(u, v);
        a[i1] = Fr::sub(u, v);
      }
    });
  }
}

}  // namespace np
