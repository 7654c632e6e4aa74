// Montgomery arithmetic over 4x64-bit limbs for the BN254 base field Fq and scalar field Fr.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

// NP_PORTABLE builds the plain C++ arithmetic only (what non-x86-64 targets get anyway).
#if defined(__x86_64__) && !defined(NP_PORTABLE)
#include <cpuid.h>
#include <immintrin.h>
#define NP_HAVE_ADX_PATH 1
#endif

#define NP_INLINE inline __attribute__((always_inline))

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

#ifdef NP_HAVE_ADX_PATH
// MULX (BMI2) with the two independent carry chains of ADCX/ADOX (ADX): CPUID leaf 7, EBX bits 8 and 19.
inline bool detectAdx() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (b & (1u << 8)) && (b & (1u << 19));
}
// Read once at load time: a branch on a constant that never changes costs the hot loops nothing measurable.
inline const bool kHasAdx = detectAdx();
#else
inline constexpr bool kHasAdx = false;
#endif

}  // namespace detail

/** Whether field multiplication runs on the MULX/ADCX/ADOX path on this machine. */
inline bool usesAdx() { return detail::kHasAdx; }

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

#ifdef NP_HAVE_ADX_PATH
  // add/sub/reduce on the carry flag (ADC/SBB chains): the u128 forms below compile to far longer code.
  using ull = unsigned long long;

  static NP_INLINE Field add(const Field& a, const Field& b) {
    ull r0, r1, r2, r3;
    unsigned char c = _addcarry_u64(0, a.v[0], b.v[0], &r0);
    c = _addcarry_u64(c, a.v[1], b.v[1], &r1);
    c = _addcarry_u64(c, a.v[2], b.v[2], &r2);
    _addcarry_u64(c, a.v[3], b.v[3], &r3);  // a + b < 2p < 2^255: no carry out
    return reduced(r0, r1, r2, r3);
  }

  static NP_INLINE Field sub(const Field& a, const Field& b) {
    ull r0, r1, r2, r3;
    unsigned char br = _subborrow_u64(0, a.v[0], b.v[0], &r0);
    br = _subborrow_u64(br, a.v[1], b.v[1], &r1);
    br = _subborrow_u64(br, a.v[2], b.v[2], &r2);
    br = _subborrow_u64(br, a.v[3], b.v[3], &r3);
    const u64 mask = (u64)0 - br;  // add p back when a < b, without a data-dependent branch
    unsigned char c = _addcarry_u64(0, r0, Tag::P[0] & mask, &r0);
    c = _addcarry_u64(c, r1, Tag::P[1] & mask, &r1);
    c = _addcarry_u64(c, r2, Tag::P[2] & mask, &r2);
    _addcarry_u64(c, r3, Tag::P[3] & mask, &r3);
    return Field{{r0, r1, r2, r3}};
  }

  // r < 2p -> r mod p, without data-dependent branches.
  static NP_INLINE Field reduced(ull r0, ull r1, ull r2, ull r3) {
    ull s0, s1, s2, s3;
    unsigned char br = _subborrow_u64(0, r0, Tag::P[0], &s0);
    br = _subborrow_u64(br, r1, Tag::P[1], &s1);
    br = _subborrow_u64(br, r2, Tag::P[2], &s2);
    br = _subborrow_u64(br, r3, Tag::P[3], &s3);
    const u64 keep = (u64)0 - br;  // all ones when r < p
    return Field{{(r0 & keep) | (s0 & ~keep), (r1 & keep) | (s1 & ~keep), (r2 & keep) | (s2 & ~keep),
                  (r3 & keep) | (s3 & ~keep)}};
  }
  static NP_INLINE void reduceOnce(Field& r) { r = reduced(r.v[0], r.v[1], r.v[2], r.v[3]); }
#else
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
#endif

  static NP_INLINE Field neg(const Field& a) { return a.isZero() ? a : sub(zero(), a); }
  static NP_INLINE Field dbl(const Field& a) { return add(a, a); }

  static NP_INLINE Field mul(const Field& a, const Field& b) {
#ifdef NP_HAVE_ADX_PATH
    if (detail::kHasAdx) return mulAdx(a, b);
#endif
    return mulPortable(a, b);
  }

  // CIOS Montgomery multiplication without the extra carry word: valid because the top limb of p is
  // below 2^62, so intermediate values never overflow 4 limbs (Koc et al.; the "no-carry" variant).
  static inline Field mulPortable(const Field& a, const Field& b) {
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

#ifdef NP_HAVE_ADX_PATH
  // The same CIOS rounds with MULX and the two carry chains of ADCX/ADOX; the running sum rotates
  // through five registers so no limb moves between rounds. Only valid where usesAdx() is true.
  static NP_INLINE Field mulAdx(const Field& a, const Field& b) {
    u64 t0, t1, t2, t3, t4, h, h2, l, z;
    asm(
        "xorl %k[z], %k[z]\n\t"
        "movq 0(%[b]), %%rdx\n\t"
        "mulxq 0(%[a]), %[t0], %[t1]\n\t"
        "mulxq 8(%[a]), %[l], %[t2]\n\t"
        "adcxq %[l], %[t1]\n\t"
        "mulxq 16(%[a]), %[l], %[t3]\n\t"
        "adcxq %[l], %[t2]\n\t"
        "mulxq 24(%[a]), %[l], %[t4]\n\t"
        "adcxq %[l], %[t3]\n\t"
        "adcxq %[z], %[t4]\n\t"
        "movq %[t0], %%rdx\n\t"
        "imulq %[inv], %%rdx\n\t"
        "xorl %k[z], %k[z]\n\t"
        "mulxq 0(%[p]), %[l], %[h]\n\t"
        "adcxq %[t0], %[l]\n\t"
        "mulxq 8(%[p]), %[l], %[h2]\n\t"
        "adcxq %[l], %[t1]\n\t"
        "adoxq %[h], %[t1]\n\t"
        "mulxq 16(%[p]), %[l], %[h]\n\t"
        "adcxq %[l], %[t2]\n\t"
        "adoxq %[h2], %[t2]\n\t"
        "mulxq 24(%[p]), %[l], %[h2]\n\t"
        "adcxq %[l], %[t3]\n\t"
        "adoxq %[h], %[t3]\n\t"
        "adcxq %[z], %[t4]\n\t"
        "adoxq %[h2], %[t4]\n\t"
        "xorl %k[z], %k[z]\n\t"
        "movq 8(%[b]), %%rdx\n\t"
        "mulxq 0(%[a]), %[l], %[h]\n\t"
        "adoxq %[l], %[t1]\n\t"
        "adcxq %[h], %[t2]\n\t"
        "mulxq 8(%[a]), %[l], %[h]\n\t"
        "adoxq %[l], %[t2]\n\t"
        "adcxq %[h], %[t3]\n\t"
        "mulxq 16(%[a]), %[l], %[h]\n\t"
        "adoxq %[l], %[t3]\n\t"
        "adcxq %[h], %[t4]\n\t"
        "mulxq 24(%[a]), %[l], %[t0]\n\t"
        "adoxq %[l], %[t4]\n\t"
        "adcxq %[z], %[t0]\n\t"
        "adoxq %[z], %[t0]\n\t"
        "movq %[t1], %%rdx\n\t"
        "imulq %[inv], %%rdx\n\t"
        "xorl %k[z], %k[z]\n\t"
        "mulxq 0(%[p]), %[l], %[h]\n\t"
        "adcxq %[t1], %[l]\n\t"
        "mulxq 8(%[p]), %[l], %[h2]\n\t"
        "adcxq %[l], %[t2]\n\t"
        "adoxq %[h], %[t2]\n\t"
        "mulxq 16(%[p]), %[l], %[h]\n\t"
        "adcxq %[l], %[t3]\n\t"
        "adoxq %[h2], %[t3]\n\t"
        "mulxq 24(%[p]), %[l], %[h2]\n\t"
        "adcxq %[l], %[t4]\n\t"
        "adoxq %[h], %[t4]\n\t"
        "adcxq %[z], %[t0]\n\t"
        "adoxq %[h2], %[t0]\n\t"
        "xorl %k[z], %k[z]\n\t"
        "movq 16(%[b]), %%rdx\n\t"
        "mulxq 0(%[a]), %[l], %[h]\n\t"
        "adoxq %[l], %[t2]\n\t"
        "adcxq %[h], %[t3]\n\t"
        "mulxq 8(%[a]), %[l], %[h]\n\t"
        "adoxq %[l], %[t3]\n\t"
        "adcxq %[h], %[t4]\n\t"
        "mulxq 16(%[a]), %[l], %[h]\n\t"
        "adoxq %[l], %[t4]\n\t"
        "adcxq %[h], %[t0]\n\t"
        "mulxq 24(%[a]), %[l], %[t1]\n\t"
        "adoxq %[l], %[t0]\n\t"
        "adcxq %[z], %[t1]\n\t"
        "adoxq %[z], %[t1]\n\t"
        "movq %[t2], %%rdx\n\t"
        "imulq %[inv], %%rdx\n\t"
        "xorl %k[z], %k[z]\n\t"
        "mulxq 0(%[p]), %[l], %[h]\n\t"
        "adcxq %[t2], %[l]\n\t"
        "mulxq 8(%[p]), %[l], %[h2]\n\t"
        "adcxq %[l], %[t3]\n\t"
        "adoxq %[h], %[t3]\n\t"
        "mulxq 16(%[p]), %[l], %[h]\n\t"
        "adcxq %[l], %[t4]\n\t"
        "adoxq %[h2], %[t4]\n\t"
        "mulxq 24(%[p]), %[l], %[h2]\n\t"
        "adcxq %[l], %[t0]\n\t"
        "adoxq %[h], %[t0]\n\t"
        "adcxq %[z], %[t1]\n\t"
        "adoxq %[h2], %[t1]\n\t"
        "xorl %k[z], %k[z]\n\t"
        "movq 24(%[b]), %%rdx\n\t"
        "mulxq 0(%[a]), %[l], %[h]\n\t"
        "adoxq %[l], %[t3]\n\t"
        "adcxq %[h], %[t4]\n\t"
        "mulxq 8(%[a]), %[l], %[h]\n\t"
        "adoxq %[l], %[t4]\n\t"
        "adcxq %[h], %[t0]\n\t"
        "mulxq 16(%[a]), %[l], %[h]\n\t"
        "adoxq %[l], %[t0]\n\t"
        "adcxq %[h], %[t1]\n\t"
        "mulxq 24(%[a]), %[l], %[t2]\n\t"
        "adoxq %[l], %[t1]\n\t"
        "adcxq %[z], %[t2]\n\t"
        "adoxq %[z], %[t2]\n\t"
        "movq %[t3], %%rdx\n\t"
        "imulq %[inv], %%rdx\n\t"
        "xorl %k[z], %k[z]\n\t"
        "mulxq 0(%[p]), %[l], %[h]\n\t"
        "adcxq %[t3], %[l]\n\t"
        "mulxq 8(%[p]), %[l], %[h2]\n\t"
        "adcxq %[l], %[t4]\n\t"
        "adoxq %[h], %[t4]\n\t"
        "mulxq 16(%[p]), %[l], %[h]\n\t"
        "adcxq %[l], %[t0]\n\t"
        "adoxq %[h2], %[t0]\n\t"
        "mulxq 24(%[p]), %[l], %[h2]\n\t"
        "adcxq %[l], %[t1]\n\t"
        "adoxq %[h], %[t1]\n\t"
        "adcxq %[z], %[t2]\n\t"
        "adoxq %[h2], %[t2]\n\t"
        : [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [t3] "=&r"(t3), [t4] "=&r"(t4), [h] "=&r"(h),
          [h2] "=&r"(h2), [l] "=&r"(l), [z] "=&r"(z)
        : [a] "r"(a.v), [b] "r"(b.v), [p] "r"(Tag::P), [inv] "m"(INV), "m"(*(const u64(*)[4])a.v),
          "m"(*(const u64(*)[4])b.v)
        : "rdx", "cc");
    Field r{{t4, t0, t1, t2}};
    reduceOnce(r);
    return r;
  }
#endif

  static NP_INLINE Field sqr(const Field& a) { return mul(a, a); }

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
