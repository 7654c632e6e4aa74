// Montgomery arithmetic over 4x64-bit limbs for the BN254 base field Fq and scalar field Fr.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace np {

using u64 = uint64_t;
using u128 = unsigned __int128;

struct U256 {
  u64 v[4];
};

namespace detail {

constexpr bool geq(const u64 a[4], const u64 b[4]) {
  for (int i = 3; i >= 0; --i) {
    if (a[i] != b[i]) return a[i] > b[i];
  }
  return true;
}

constexpr void subInPlace(u64 a[4], const u64 b[4]) {
  u64 borrow = 0;
  for (int i = 0; i < 4; ++i) {
    u128 d = (u128)a[i] - b[i] - borrow;
    a[i] = (u64)d;
    borrow = (u64)(d >> 64) & 1;
  }
}

// 2^bits mod p by repeated doubling; used only to derive constants at compile time.
constexpr U256 powTwoMod(const u64 p[4], int bits) {
  U256 r{{1, 0, 0, 0}};
  for (int k = 0; k < bits; ++k) {
    u64 carry = 0;
    for (int i = 0; i < 4; ++i) {
      u64 nc = r.v[i] >> 63;
      r.v[i] = (r.v[i] << 1) | carry;
      carry = nc;
    }
    if (carry || geq(r.v, p)) subInPlace(r.v, p);
  }
  return r;
}

constexpr u64 negInv64(u64 p0) {
  u64 x = 1;
  for (int i = 0; i < 7; ++i) x = x * (2 - p0 * x);
  return (u64)0 - x;
}

}  // namespace detail

struct FqTag {
  static constexpr u64 P[4] = {0x3c208c16d87cfd47ULL, 0x97816a916871ca8dULL, 0xb85045b68181585dULL,
                               0x30644e72e131a029ULL};
};
struct FrTag {
  static constexpr u64 P[4] = {0x43e1f593f0000001ULL, 0x2833e84879b97091ULL, 0xb85045b68181585dULL,
                               0x30644e72e131a029ULL};
};

// Elements are kept in Montgomery form (R = 2^256), the same representation snarkjs writes to zkey files.
template <class Tag>
struct Field {
  u64 v[4];

  static constexpr u64 INV = detail::negInv64(Tag::P[0]);
  static constexpr U256 R1 = detail::powTwoMod(Tag::P, 256);
  static constexpr U256 R2 = detail::powTwoMod(Tag::P, 512);

  static inline Field zero() { return Field{{0, 0, 0, 0}}; }
  static inline Field one() { return Field{{R1.v[0], R1.v[1], R1.v[2], R1.v[3]}}; }

  inline bool isZero() const { return (v[0] | v[1] | v[2] | v[3]) == 0; }
  inline bool operator==(const Field& o) const {
    return v[0] == o.v[0] && v[1] == o.v[1] && v[2] == o.v[2] && v[3] == o.v[3];
  }
  inline bool operator!=(const Field& o) const { return !(*this == o); }

  // True when a raw little-endian value is a canonical residue (< p).
  static inline bool isCanonical(const u64 a[4]) { return !detail::geq(a, Tag::P); }

  static inline Field add(const Field& a, const Field& b) {
    Field r;
    u64 c = 0;
    for (int i = 0; i < 4; ++i) {
      u128 s = (u128)a.v[i] + b.v[i] + c;
      r.v[i] = (u64)s;
      c = (u64)(s >> 64);
    }
    reduceOnce(r);
    return r;
  }

  static inline Field sub(const Field& a, const Field& b) {
    Field r;
    u64 borrow = 0;
    for (int i = 0; i < 4; ++i) {
      u128 d = (u128)a.v[i] - b.v[i] - borrow;
      r.v[i] = (u64)d;
      borrow = (u64)(d >> 64) & 1;
    }
    // Branch-free: add p back masked by the borrow.
    u64 mask = (u64)0 - borrow;
    u64 c = 0;
    for (int i = 0; i < 4; ++i) {
      u128 s = (u128)r.v[i] + (Tag::P[i] & mask) + c;
      r.v[i] = (u64)s;
      c = (u64)(s >> 64);
    }
    return r;
  }

  static inline Field neg(const Field& a) { return a.isZero() ? a : sub(zero(), a); }
  static inline Field dbl(const Field& a) { return add(a, a); }

  // CIOS Montgomery multiplication without the extra carry word: valid because the top limb of p is
  // below 2^62, so intermediate values never overflow 4 limbs (Koc et al.; the "no-carry" variant).
  static inline Field mul(const Field& a, const Field& b) {
    u64 t[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4; ++i) {
      u128 x = (u128)a.v[0] * b.v[i] + t[0];
      u64 A = (u64)(x >> 64);
      t[0] = (u64)x;
      u64 m = t[0] * INV;
      u128 y = (u128)m * Tag::P[0] + t[0];
      u64 C = (u64)(y >> 64);
      for (int j = 1; j < 4; ++j) {
        x = (u128)a.v[j] * b.v[i] + t[j] + A;
        A = (u64)(x >> 64);
        t[j] = (u64)x;
        y = (u128)m * Tag::P[j] + t[j] + C;
        C = (u64)(y >> 64);
        t[j - 1] = (u64)y;
      }
      t[3] = C + A;
    }
    Field r{{t[0], t[1], t[2], t[3]}};
    reduceOnce(r);
    return r;
  }

  static inline Field sqr(const Field& a) { return mul(a, a); }

  // r < 2p -> r mod p, without data-dependent branches.
  static inline void reduceOnce(Field& r) {
    u64 t[4];
    u64 borrow = 0;
    for (int i = 0; i < 4; ++i) {
      u128 d = (u128)r.v[i] - Tag::P[i] - borrow;
      t[i] = (u64)d;
      borrow = (u64)(d >> 64) & 1;
    }
    u64 keep = (u64)0 - borrow;  // all ones when r < p
    for (int i = 0; i < 4; ++i) r.v[i] = (r.v[i] & keep) | (t[i] & ~keep);
  }

  // Standard (non-Montgomery) integer -> Montgomery form; input must be < p.
  static inline Field fromStd(const u64 a[4]) {
    Field x{{a[0], a[1], a[2], a[3]}};
    Field r2{{R2.v[0], R2.v[1], R2.v[2], R2.v[3]}};
    return mul(x, r2);
  }
  static inline Field fromU64(u64 n) {
    u64 a[4] = {n, 0, 0, 0};
    return fromStd(a);
  }
  inline U256 toStd() const {
    Field one1{{1, 0, 0, 0}};
    Field r = mul(*this, one1);
    return U256{{r.v[0], r.v[1], r.v[2], r.v[3]}};
  }

  // a^e for a standard-form exponent.
  static Field pow(const Field& a, const U256& e) {
    Field r = one();
    for (int i = 255; i >= 0; --i) {
      r = sqr(r);
      if ((e.v[i >> 6] >> (i & 63)) & 1) r = mul(r, a);
    }
    return r;
  }

  static Field inv(const Field& a) {
    U256 e{{Tag::P[0] - 2, Tag::P[1], Tag::P[2], Tag::P[3]}};
    return pow(a, e);
  }
};

using Fq = Field<FqTag>;
using Fr = Field<FrTag>;

// Decimal rendering of a standard-form 256-bit integer.
inline std::string toDecimal(const U256& x) {
  u64 a[4] = {x.v[0], x.v[1], x.v[2], x.v[3]};
  std::string digits;
  const u64 base = 10000000000000000000ULL;  // 10^19
  while (a[0] | a[1] | a[2] | a[3]) {
    u128 rem = 0;
    for (int i = 3; i >= 0; --i) {
      u128 cur = (rem << 64) | a[i];
      a[i] = (u64)(cur / base);
      rem = cur % base;
    }
    u64 chunk = (u64)rem;
    bool more = (a[0] | a[1] | a[2] | a[3]) != 0;
    for (int k = 0; k < 19 && (more || chunk); ++k) {
      digits.push_back((char)('0' + chunk % 10));
      chunk /= 10;
    }
  }
  if (digits.empty()) return "0";
  return std::string(digits.rbegin(), digits.rend());
}

}  // namespace np
