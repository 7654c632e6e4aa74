// BN254 optimal ate pairing over curve.hpp's Fq2: the Fq6/Fq12 tower, G2 line coefficients, the
// multi-Miller loop and the final exponentiation.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "curve.hpp"

namespace np {

// ---- Tower: Fq6 = Fq2[v]/(v^3 - xi), Fq12 = Fq6[w]/(w^2 - v), xi = 9 + u, so w^6 = xi.

NP_INLINE Fq2 fq2MulXi(const Fq2& a) {
  // (c0 + c1 u)(9 + u) = (9 c0 - c1) + (c0 + 9 c1) u
  Fq n0 = Fq::add(Fq::dbl(Fq::dbl(Fq::dbl(a.c0))), a.c0);
  Fq n1 = Fq::add(Fq::dbl(Fq::dbl(Fq::dbl(a.c1))), a.c1);
  return Fq2{Fq::sub(n0, a.c1), Fq::add(n1, a.c0)};
}
NP_INLINE Fq2 fq2Conj(const Fq2& a) { return Fq2{a.c0, Fq::neg(a.c1)}; }
NP_INLINE Fq2 fq2MulFq(const Fq2& a, const Fq& s) { return Fq2{Fq::mul(a.c0, s), Fq::mul(a.c1, s)}; }

// a^e for a standard-form exponent.
inline Fq2 fq2Pow(const Fq2& a, const U256& e) {
  Fq2 r = Fq2::one();
  for (int i = 255; i >= 0; --i) {
    r = Fq2::sqr(r);
    if ((e.v[i >> 6] >> (i & 63)) & 1) r = Fq2::mul(r, a);
  }
  return r;
}

struct Fq6 {
  Fq2 c0, c1, c2;

  static inline Fq6 zero() { return Fq6{Fq2::zero(), Fq2::zero(), Fq2::zero()}; }
  static inline Fq6 one() { return Fq6{Fq2::one(), Fq2::zero(), Fq2::zero()}; }
  inline bool operator==(const Fq6& o) const { return c0 == o.c0 && c1 == o.c1 && c2 == o.c2; }

  static inline Fq6 add(const Fq6& a, const Fq6& b) {
    return Fq6{Fq2::add(a.c0, b.c0), Fq2::add(a.c1, b.c1), Fq2::add(a.c2, b.c2)};
  }
  static inline Fq6 sub(const Fq6& a, const Fq6& b) {
    return Fq6{Fq2::sub(a.c0, b.c0), Fq2::sub(a.c1, b.c1), Fq2::sub(a.c2, b.c2)};
  }
  static inline Fq6 neg(const Fq6& a) { return Fq6{Fq2::neg(a.c0), Fq2::neg(a.c1), Fq2::neg(a.c2)}; }
  // Times v: (a0, a1, a2) -> (xi a2, a0, a1).
  static inline Fq6 mulV(const Fq6& a) { return Fq6{fq2MulXi(a.c2), a.c0, a.c1}; }

  // Karatsuba over the cubic extension: six Fq2 products.
  static inline Fq6 mul(const Fq6& a, const Fq6& b) {
    Fq2 t0 = Fq2::mul(a.c0, b.c0);
    Fq2 t1 = Fq2::mul(a.c1, b.c1);
    Fq2 t2 = Fq2::mul(a.c2, b.c2);
    Fq2 x12 = Fq2::sub(Fq2::sub(Fq2::mul(Fq2::add(a.c1, a.c2), Fq2::add(b.c1, b.c2)), t1), t2);
    Fq2 x01 = Fq2::sub(Fq2::sub(Fq2::mul(Fq2::add(a.c0, a.c1), Fq2::add(b.c0, b.c1)), t0), t1);
    Fq2 x02 = Fq2::sub(Fq2::sub(Fq2::mul(Fq2::add(a.c0, a.c2), Fq2::add(b.c0, b.c2)), t0), t2);
    return Fq6{Fq2::add(t0, fq2MulXi(x12)), Fq2::add(x01, fq2MulXi(t2)), Fq2::add(x02, t1)};
  }

  // Chung-Hasan SQR2: two multiplications and three squarings in Fq2.
  static inline Fq6 sqr(const Fq6& a) {
    Fq2 s0 = Fq2::sqr(a.c0);
    Fq2 s1 = Fq2::dbl(Fq2::mul(a.c0, a.c1));
    Fq2 s2 = Fq2::sqr(Fq2::add(Fq2::sub(a.c0, a.c1), a.c2));
    Fq2 s3 = Fq2::dbl(Fq2::mul(a.c1, a.c2));
    Fq2 s4 = Fq2::sqr(a.c2);
    return Fq6{Fq2::add(s0, fq2MulXi(s3)), Fq2::add(s1, fq2MulXi(s4)),
               Fq2::sub(Fq2::sub(Fq2::add(Fq2::add(s1, s2), s3), s0), s4)};
  }

  // a * (b0 + b1 v): five Fq2 products.
  static inline Fq6 mulBy01(const Fq6& a, const Fq2& b0, const Fq2& b1) {
    Fq2 t0 = Fq2::mul(a.c0, b0);
    Fq2 t1 = Fq2::mul(a.c1, b1);
    Fq2 x01 = Fq2::sub(Fq2::sub(Fq2::mul(Fq2::add(a.c0, a.c1), Fq2::add(b0, b1)), t0), t1);
    return Fq6{Fq2::add(t0, fq2MulXi(Fq2::mul(a.c2, b1))), x01, Fq2::add(Fq2::mul(a.c2, b0), t1)};
  }

  // a * (b0 + v): three Fq2 products.
  static inline Fq6 mulBy0v(const Fq6& a, const Fq2& b0) {
    Fq2 t0 = Fq2::mul(a.c0, b0);
    Fq2 x01 = Fq2::sub(Fq2::sub(Fq2::mul(Fq2::add(a.c0, a.c1), Fq2::add(b0, Fq2::one())), t0), a.c1);
    return Fq6{Fq2::add(t0, fq2MulXi(a.c2)), x01, Fq2::add(Fq2::mul(a.c2, b0), a.c1)};
  }

  static inline Fq6 mulFq2(const Fq6& a, const Fq2& s) {
    return Fq6{Fq2::mul(a.c0, s), Fq2::mul(a.c1, s), Fq2::mul(a.c2, s)};
  }

  static inline Fq6 inv(const Fq6& a) {
    Fq2 t0 = Fq2::sub(Fq2::sqr(a.c0), fq2MulXi(Fq2::mul(a.c1, a.c2)));
    Fq2 t1 = Fq2::sub(fq2MulXi(Fq2::sqr(a.c2)), Fq2::mul(a.c0, a.c1));
    Fq2 t2 = Fq2::sub(Fq2::sqr(a.c1), Fq2::mul(a.c0, a.c2));
    Fq2 norm = Fq2::add(Fq2::mul(a.c0, t0), fq2MulXi(Fq2::add(Fq2::mul(a.c2, t1), Fq2::mul(a.c1, t2))));
    Fq2 ni = Fq2::inv(norm);
    return Fq6{Fq2::mul(t0, ni), Fq2::mul(t1, ni), Fq2::mul(t2, ni)};
  }
};

// Frobenius coefficients: gamma[k][i] = xi^(i (p^k - 1) / 6) multiplies the Fq2 coefficient of w^i
// under x -> x^(p^k); derived at first use from xi^((p - 1) / 6) rather than written out.
struct FrobeniusConstants {
  Fq2 gamma[4][6];
  Fq2 twistX;  // xi^((p - 1) / 3): the twisted Frobenius on G2, x coordinate
  Fq2 twistY;  // xi^((p - 1) / 2): and y

  static const FrobeniusConstants& get() {
    static const FrobeniusConstants c = make();
    return c;
  }

 private:
  static FrobeniusConstants make() {
    // (p - 1) / 6, by long division on the limbs.
    U256 e{};
    u128 rem = 0;
    for (int i = 3; i >= 0; --i) {
      u128 cur = (rem << 64) | (i == 0 ? FqTag::P[0] - 1 : FqTag::P[i]);
      e.v[i] = (u64)(cur / 6);
      rem = cur % 6;
    }
    const Fq2 xi{Fq::fromU64(9), Fq::fromU64(1)};
    const Fq2 g1 = fq2Pow(xi, e);
    // x^p is the conjugate in Fq2, so xi^((p^2 - 1)/6) = g1^(p + 1) and xi^((p^3 - 1)/6) = g1^(p^2 + p + 1).
    const Fq2 g2 = Fq2::mul(fq2Conj(g1), g1);
    const Fq2 g3 = Fq2::mul(g2, g1);
    FrobeniusConstants c;
    const Fq2 base[4] = {Fq2::one(), g1, g2, g3};
    for (int k = 0; k < 4; ++k) {
      Fq2 acc = Fq2::one();
      for (int i = 0; i < 6; ++i) {
        c.gamma[k][i] = acc;
        acc = Fq2::mul(acc, base[k]);
      }
    }
    c.twistX = c.gamma[1][2];
    c.twistY = c.gamma[1][3];
    return c;
  }
};

struct Fq12 {
  Fq6 c0, c1;

  static inline Fq12 one() { return Fq12{Fq6::one(), Fq6::zero()}; }
  inline bool isOne() const { return c0 == Fq6::one() && c1 == Fq6::zero(); }
  inline bool operator==(const Fq12& o) const { return c0 == o.c0 && c1 == o.c1; }

  static inline Fq12 mul(const Fq12& a, const Fq12& b) {
    Fq6 t0 = Fq6::mul(a.c0, b.c0);
    Fq6 t1 = Fq6::mul(a.c1, b.c1);
    Fq6 x = Fq6::sub(Fq6::sub(Fq6::mul(Fq6::add(a.c0, a.c1), Fq6::add(b.c0, b.c1)), t0), t1);
    return Fq12{Fq6::add(t0, Fq6::mulV(t1)), x};
  }

  // (a0 + a1 w)^2 = (a0 + a1)(a0 + v a1) - t - v t + 2t w, t = a0 a1.
  static inline Fq12 sqr(const Fq12& a) {
    Fq6 t = Fq6::mul(a.c0, a.c1);
    Fq6 x = Fq6::mul(Fq6::add(a.c0, a.c1), Fq6::add(a.c0, Fq6::mulV(a.c1)));
    return Fq12{Fq6::sub(Fq6::sub(x, t), Fq6::mulV(t)), Fq6::add(t, t)};
  }

  // The square of an element of the cyclotomic subgroup (what the final exponentiation works in), as
  // three squarings in Fq4 = Fq2[y]/(y^2 - xi): Granger and Scott, "Faster squaring in the cyclotomic
  // subgroup of sixth degree extensions". Half the cost of sqr; wrong outside the subgroup.
  static inline Fq12 cyclotomicSqr(const Fq12& a) {
    // (x + y Y)^2 = (x^2 + xi y^2) + 2xy Y, the first part as (x + y)(x + xi y) - xy - xi xy.
    auto fq4Sqr = [](const Fq2& x, const Fq2& y, Fq2* s0, Fq2* s1) {
      Fq2 xy = Fq2::mul(x, y);
      *s0 = Fq2::sub(Fq2::sub(Fq2::mul(Fq2::add(x, y), Fq2::add(x, fq2MulXi(y))), xy), fq2MulXi(xy));
      *s1 = Fq2::dbl(xy);
    };
    Fq2 t0, t1, t2, t3, t4, t5;
    fq4Sqr(a.c0.c0, a.c1.c1, &t0, &t1);
    fq4Sqr(a.c1.c0, a.c0.c2, &t2, &t3);
    fq4Sqr(a.c0.c1, a.c1.c2, &t4, &t5);
    auto threeMinusTwo = [](const Fq2& t, const Fq2& z) {  // 3t - 2z
      Fq2 d = Fq2::sub(t, z);
      return Fq2::add(Fq2::dbl(d), t);
    };
    auto threePlusTwo = [](const Fq2& t, const Fq2& z) {  // 3t + 2z
      Fq2 d = Fq2::add(t, z);
      return Fq2::add(Fq2::dbl(d), t);
    };
    Fq12 r;
    r.c0.c0 = threeMinusTwo(t0, a.c0.c0);
    r.c1.c1 = threePlusTwo(t1, a.c1.c1);
    r.c1.c0 = threePlusTwo(fq2MulXi(t5), a.c1.c0);
    r.c0.c2 = threeMinusTwo(t4, a.c0.c2);
    r.c0.c1 = threeMinusTwo(t2, a.c0.c1);
    r.c1.c2 = threePlusTwo(t3, a.c1.c2);
    return r;
  }

  // x^(p^6); the inverse of an element of the cyclotomic subgroup.
  static inline Fq12 conj(const Fq12& a) { return Fq12{a.c0, Fq6::neg(a.c1)}; }

  static inline Fq12 inv(const Fq12& a) {
    Fq6 d = Fq6::sub(Fq6::sqr(a.c0), Fq6::mulV(Fq6::sqr(a.c1)));
    Fq6 di = Fq6::inv(d);
    return Fq12{Fq6::mul(a.c0, di), Fq6::neg(Fq6::mul(a.c1, di))};
  }

  // a * (d0 + d3 w + d4 w^3), the shape of every line value (D-type twist).
  static inline Fq12 mulBy034(const Fq12& a, const Fq2& d0, const Fq2& d3, const Fq2& d4) {
    Fq6 t0 = Fq6::mulFq2(a.c0, d0);
    Fq6 t1 = Fq6::mulBy01(a.c1, d3, d4);
    Fq6 s = Fq6::mulBy01(Fq6::add(a.c0, a.c1), Fq2::add(d0, d3), d4);
    return Fq12{Fq6::add(t0, Fq6::mulV(t1)), Fq6::sub(Fq6::sub(s, t0), t1)};
  }

  // a * (d0 + d3 w + w^3): a line scaled so its w^3 coefficient is one, four Fq2 products fewer.
  static inline Fq12 mulBy034Unit(const Fq12& a, const Fq2& d0, const Fq2& d3) {
    Fq6 t0 = Fq6::mulFq2(a.c0, d0);
    Fq6 t1 = Fq6::mulBy0v(a.c1, d3);
    Fq6 s = Fq6::mulBy0v(Fq6::add(a.c0, a.c1), Fq2::add(d0, d3));
    return Fq12{Fq6::add(t0, Fq6::mulV(t1)), Fq6::sub(Fq6::sub(s, t0), t1)};
  }

  // x^(p^k) for k = 1, 2, 3. Coefficient of w^i: c0.c0 w^0, c1.c0 w^1, c0.c1 w^2, c1.c1 w^3, c0.c2 w^4, c1.c2 w^5.
  static inline Fq12 frobenius(const Fq12& a, int k) {
    const auto& g = FrobeniusConstants::get().gamma[k];
    auto f = [k](const Fq2& x) { return (k & 1) ? fq2Conj(x) : x; };
    return Fq12{Fq6{Fq2::mul(f(a.c0.c0), g[0]), Fq2::mul(f(a.c0.c1), g[2]), Fq2::mul(f(a.c0.c2), g[4])},
                Fq6{Fq2::mul(f(a.c1.c0), g[1]), Fq2::mul(f(a.c1.c1), g[3]), Fq2::mul(f(a.c1.c2), g[5])}};
  }
};

// ---- Miller loop

// The curve parameter x (p = 36x^4 + 36x^3 + 24x^2 + 6x + 1) and the loop count 6x + 2 in NAF form,
// least significant digit first.
constexpr u64 kBnX = 0x44e992b44a6909f1ULL;

struct AteLoop {
  std::array<int8_t, 72> digits{};
  int length = 0;
};

constexpr AteLoop makeAteLoop() {
  AteLoop loop{};
  u128 n = (u128)kBnX * 6 + 2;
  while (n) {
    int8_t d = 0;
    if (n & 1) {
      d = (n & 3) == 3 ? -1 : 1;
      n = d == 1 ? n - 1 : n + 1;
    }
    loop.digits[loop.length++] = d;
    n >>= 1;
  }
  return loop;
}
inline constexpr AteLoop kAteLoop = makeAteLoop();

// One line, as the coefficients of d0 + d3 w + d4 w^3 before d0 is scaled by yP and d3 by xP.
struct LineCoeffs {
  Fq2 a, b, c;
};

// The lines of the Miller loop for one G2 point, in loop order: computed once for a fixed point
// (a verification key's beta, gamma, delta) and evaluated at any G1 point.
struct G2Prepared {
  std::vector<LineCoeffs> lines;
  // Every line divided by its c, so c = 1 (a factor in Fq2 the final exponentiation removes): worth an
  // inversion per line for a point whose lines are evaluated many times.
  bool unit = false;
};

namespace detail {

inline const Fq& halfFq() {
  static const Fq h = Fq::inv(Fq::fromU64(2));
  return h;
}

// T in homogeneous projective coordinates (x = X/Z, y = Y/Z) on the twist.
struct TwistPoint {
  Fq2 x, y, z;
};

// Doubling step with its tangent line (Costello-Lange-Naehrig, homogeneous coordinates), the line
// scaled by -2YZ, a factor in Fq2 that the final exponentiation removes.
inline LineCoeffs doublingStep(TwistPoint& t) {
  const Fq& half = halfFq();
  Fq2 a = fq2MulFq(Fq2::mul(t.x, t.y), half);
  Fq2 b = Fq2::sqr(t.y);
  Fq2 c = Fq2::sqr(t.z);
  Fq2 e = Fq2::mul(twistB(), Fq2::add(Fq2::dbl(c), c));
  Fq2 f = Fq2::add(Fq2::dbl(e), e);
  Fq2 g = fq2MulFq(Fq2::add(b, f), half);
  Fq2 h = Fq2::sub(Fq2::sqr(Fq2::add(t.y, t.z)), Fq2::add(b, c));
  Fq2 i = Fq2::sub(e, b);
  Fq2 j = Fq2::sqr(t.x);
  Fq2 e2 = Fq2::sqr(e);
  t.x = Fq2::mul(a, Fq2::sub(b, f));
  t.y = Fq2::sub(Fq2::sqr(g), Fq2::add(Fq2::dbl(e2), e2));
  t.z = Fq2::mul(b, h);
  return LineCoeffs{Fq2::neg(h), Fq2::add(Fq2::dbl(j), j), i};
}

// Mixed addition T + Q with the chord through them, scaled by (X - xQ Z).
inline LineCoeffs additionStep(TwistPoint& t, const G2Affine& q) {
  Fq2 theta = Fq2::sub(t.y, Fq2::mul(q.y, t.z));
  Fq2 lambda = Fq2::sub(t.x, Fq2::mul(q.x, t.z));
  Fq2 c = Fq2::sqr(theta);
  Fq2 d = Fq2::sqr(lambda);
  Fq2 e = Fq2::mul(lambda, d);
  Fq2 f = Fq2::mul(t.z, c);
  Fq2 g = Fq2::mul(t.x, d);
  Fq2 h = Fq2::sub(Fq2::add(e, f), Fq2::dbl(g));
  t.x = Fq2::mul(lambda, h);
  t.y = Fq2::sub(Fq2::mul(theta, Fq2::sub(g, h)), Fq2::mul(e, t.y));
  t.z = Fq2::mul(t.z, e);
  Fq2 j = Fq2::sub(Fq2::mul(theta, q.x), Fq2::mul(lambda, q.y));
  return LineCoeffs{lambda, Fq2::neg(theta), j};
}

// The p-power Frobenius carried to the twist: untwist, raise to p, twist back.
inline G2Affine twistFrobenius(const G2Affine& q) {
  const auto& c = FrobeniusConstants::get();
  return G2Affine{Fq2::mul(fq2Conj(q.x), c.twistX), Fq2::mul(fq2Conj(q.y), c.twistY)};
}

}  // namespace detail

// Lines for a non-zero point of G2 (the caller checks the subgroup: the loop assumes order r).
inline G2Prepared prepareG2(const G2Affine& q) {
  G2Prepared out;
  out.lines.reserve(2 * kAteLoop.length + 2);
  detail::TwistPoint t{q.x, q.y, Fq2::one()};
  const G2Affine negQ{q.x, Fq2::neg(q.y)};
  for (int i = kAteLoop.length - 2; i >= 0; --i) {
    out.lines.push_back(detail::doublingStep(t));
    if (kAteLoop.digits[i] == 1) out.lines.push_back(detail::additionStep(t, q));
    if (kAteLoop.digits[i] == -1) out.lines.push_back(detail::additionStep(t, negQ));
  }
  // The optimal ate correction: add pi(Q), then -pi^2(Q).
  const G2Affine q1 = detail::twistFrobenius(q);
  G2Affine q2 = detail::twistFrobenius(q1);
  q2.y = Fq2::neg(q2.y);
  out.lines.push_back(detail::additionStep(t, q1));
  out.lines.push_back(detail::additionStep(t, q2));
  return out;
}

// Scales every line so its c is one, with one inversion for all (Montgomery's trick); lines whose c
// is zero (none for a point of order r) leave the lines as they are.
inline void normalizeLines(G2Prepared& q) {
  const size_t n = q.lines.size();
  std::vector<Fq2> prefix(n);
  Fq2 acc = Fq2::one();
  for (size_t i = 0; i < n; ++i) {
    if (q.lines[i].c.isZero()) return;
    prefix[i] = acc;
    acc = Fq2::mul(acc, q.lines[i].c);
  }
  Fq2 inv = Fq2::inv(acc);
  for (size_t i = n; i-- > 0;) {
    LineCoeffs& l = q.lines[i];
    const Fq2 ci = Fq2::mul(inv, prefix[i]);
    inv = Fq2::mul(inv, l.c);
    l.a = Fq2::mul(l.a, ci);
    l.b = Fq2::mul(l.b, ci);
    l.c = Fq2::one();
  }
  q.unit = true;
}

struct MillerPair {
  const G1Affine* p;  // affine, not the point at infinity
  const G2Prepared* q;
};

inline Fq12 evalLine(const Fq12& f, const LineCoeffs& l, const MillerPair& pair) {
  const G1Affine& p = *pair.p;
  if (pair.q->unit) return Fq12::mulBy034Unit(f, fq2MulFq(l.a, p.y), fq2MulFq(l.b, p.x));
  return Fq12::mulBy034(f, fq2MulFq(l.a, p.y), fq2MulFq(l.b, p.x), l.c);
}

// The product of the Miller loops of all pairs, sharing one accumulator and its squarings.
inline Fq12 multiMillerLoop(const MillerPair* pairs, size_t n) {
  Fq12 f = Fq12::one();
  size_t idx = 0;
  for (int i = kAteLoop.length - 2; i >= 0; --i) {
    if (i != kAteLoop.length - 2) f = Fq12::sqr(f);
    for (size_t k = 0; k < n; ++k) f = evalLine(f, pairs[k].q->lines[idx], pairs[k]);
    ++idx;
    if (kAteLoop.digits[i] != 0) {
      for (size_t k = 0; k < n; ++k) f = evalLine(f, pairs[k].q->lines[idx], pairs[k]);
      ++idx;
    }
  }
  for (int last = 0; last < 2; ++last, ++idx) {
    for (size_t k = 0; k < n; ++k) f = evalLine(f, pairs[k].q->lines[idx], pairs[k]);
  }
  return f;
}

// ---- Final exponentiation

namespace detail {

// x in width-4 NAF, least significant digit first: digits 0 or odd in [-7, 7], so f^x takes 62
// squarings and 13 multiplications by f, f^3, f^5, f^7 or their conjugates (the inverses here).
struct XWnaf {
  std::array<int8_t, 66> digits{};
  int length = 0;
};

constexpr XWnaf makeXWnaf() {
  XWnaf naf{};
  int64_t n = (int64_t)kBnX;  // below 2^63
  while (n) {
    int8_t d = 0;
    if (n & 1) {
      d = (int8_t)(n & 15);
      if (d >= 8) d = (int8_t)(d - 16);
      n -= d;
    }
    naf.digits[naf.length++] = d;
    n >>= 1;
  }
  return naf;
}
inline constexpr XWnaf kXWnaf = makeXWnaf();

// f^x for an f in the cyclotomic subgroup.
inline Fq12 expByX(const Fq12& f) {
  Fq12 odd[4];  // f, f^3, f^5, f^7
  odd[0] = f;
  const Fq12 f2 = Fq12::cyclotomicSqr(f);
  for (int k = 1; k < 4; ++k) odd[k] = Fq12::mul(odd[k - 1], f2);
  auto digit = [&](int d) { return d > 0 ? odd[d >> 1] : Fq12::conj(odd[(-d) >> 1]); };
  Fq12 r = digit(kXWnaf.digits[kXWnaf.length - 1]);
  for (int i = kXWnaf.length - 2; i >= 0; --i) {
    r = Fq12::cyclotomicSqr(r);
    if (kXWnaf.digits[i]) r = Fq12::mul(r, digit(kXWnaf.digits[i]));
  }
  return r;
}

inline Fq12 expByNegX(const Fq12& f) { return Fq12::conj(expByX(f)); }

}  // namespace detail

// f^((p^12 - 1)/r) raised to a fixed power coprime to r (2x(6x^2 + 3x + 1)): the easy part
// (p^6 - 1)(p^2 + 1), then the hard part as in Fuentes-Castaneda et al., "Faster hashing to G2".
// Enough to tell whether a product of pairings is one. f must be non-zero.
inline Fq12 finalExponentiation(const Fq12& f) {
  Fq12 r = Fq12::mul(Fq12::conj(f), Fq12::inv(f));
  r = Fq12::mul(Fq12::frobenius(r, 2), r);

  Fq12 y0 = detail::expByNegX(r);
  Fq12 y1 = Fq12::cyclotomicSqr(y0);
  Fq12 y2 = Fq12::cyclotomicSqr(y1);
  Fq12 y3 = Fq12::mul(y2, y1);
  Fq12 y4 = detail::expByNegX(y3);
  Fq12 y5 = Fq12::cyclotomicSqr(y4);
  Fq12 y6 = detail::expByNegX(y5);
  y3 = Fq12::conj(y3);
  y6 = Fq12::conj(y6);
  Fq12 y7 = Fq12::mul(y6, y4);
  Fq12 y8 = Fq12::mul(y7, y3);
  Fq12 y9 = Fq12::mul(y8, y1);
  Fq12 y10 = Fq12::mul(y8, y4);
  Fq12 y11 = Fq12::mul(y10, r);
  Fq12 y13 = Fq12::mul(Fq12::frobenius(y9, 1), y11);
  Fq12 y14 = Fq12::mul(Fq12::frobenius(y8, 2), y13);
  Fq12 y15 = Fq12::frobenius(Fq12::mul(Fq12::conj(r), y9), 3);
  return Fq12::mul(y15, y14);
}

// Whether the product of e(P_i, Q_i) is one. Pairs whose G1 point is at infinity contribute one.
inline bool pairingProductIsOne(const MillerPair* pairs, size_t n, const Fq12* extra = nullptr) {
  Fq12 f = multiMillerLoop(pairs, n);
  if (extra) f = Fq12::mul(f, *extra);
  return finalExponentiation(f).isOne();
}

namespace detail {

// psi on Jacobian coordinates: conjugation commutes with x = X/Z^2, y = Y/Z^3.
inline G2 psi(const G2& p) {
  const auto& c = FrobeniusConstants::get();
  return G2{Fq2::mul(fq2Conj(p.x), c.twistX), Fq2::mul(fq2Conj(p.y), c.twistY), fq2Conj(p.z)};
}

}  // namespace detail

// G2 subgroup membership for a point on the twist (whose cofactor is not one, so on-curve is not
// enough). Equivalent to r Q = O on BN254 but with a 63-bit scalar: [x+1]Q + psi([x]Q) + psi^2([x]Q)
// = psi^3([2x]Q) (El Housni, Guillevic and Piellard, "Co-factor clearing and subgroup membership
// testing on pairing-friendly curves", sec. 5.1; the check gnark-crypto uses).
inline bool inG2Subgroup(const G2Affine& q) {
  if (q.isZero()) return true;
  const G2 p = G2::fromAffine(q);
  const G2 xq = G2::mulScalar(p, U256{{kBnX, 0, 0, 0}});
  const G2 psiXq = detail::psi(xq);
  const G2 psi2Xq = detail::psi(psiXq);
  const G2 lhs = G2::add(G2::add(G2::add(xq, p), psiXq), psi2Xq);
  const G2 rhs = G2::dbl(detail::psi(psi2Xq));
  return G2::add(rhs, G2::neg(lhs)).isZero();
}

// The same membership by definition, r Q = O; slower, kept as the reference the fast check is tested against.
inline bool inG2SubgroupByOrder(const G2Affine& q) {
  if (q.isZero()) return true;
  U256 r{{FrTag::P[0], FrTag::P[1], FrTag::P[2], FrTag::P[3]}};
  return G2::mulScalar(G2::fromAffine(q), r).isZero();
}

}  // namespace np
