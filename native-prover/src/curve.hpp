// BN254 G1 (over Fq) and G2 (over Fq2) in Jacobian coordinates, with affine points as stored in zkeys.
#pragma once

#include "field.hpp"

namespace np {

// Fq2 = Fq[u]/(u^2 + 1), coefficients stored c0 then c1 (the zkey layout).
struct Fq2 {
  Fq c0, c1;

  static inline Fq2 zero() { return Fq2{Fq::zero(), Fq::zero()}; }
  static inline Fq2 one() { return Fq2{Fq::one(), Fq::zero()}; }
  inline bool isZero() const { return c0.isZero() && c1.isZero(); }
  inline bool operator==(const Fq2& o) const { return c0 == o.c0 && c1 == o.c1; }
  inline bool operator!=(const Fq2& o) const { return !(*this == o); }
  static inline Fq2 add(const Fq2& a, const Fq2& b) { return Fq2{Fq::add(a.c0, b.c0), Fq::add(a.c1, b.c1)}; }
  static inline Fq2 sub(const Fq2& a, const Fq2& b) { return Fq2{Fq::sub(a.c0, b.c0), Fq::sub(a.c1, b.c1)}; }
  static inline Fq2 dbl(const Fq2& a) { return add(a, a); }
  static inline Fq2 neg(const Fq2& a) { return Fq2{Fq::neg(a.c0), Fq::neg(a.c1)}; }
  static inline Fq2 mul(const Fq2& a, const Fq2& b) {
    Fq t0 = Fq::mul(a.c0, b.c0);
    Fq t1 = Fq::mul(a.c1, b.c1);
    Fq t2 = Fq::mul(Fq::add(a.c0, a.c1), Fq::add(b.c0, b.c1));
    return Fq2{Fq::sub(t0, t1), Fq::sub(Fq::sub(t2, t0), t1)};
  }
  static inline Fq2 sqr(const Fq2& a) {
    Fq t = Fq::mul(a.c0, a.c1);
    return Fq2{Fq::mul(Fq::add(a.c0, a.c1), Fq::sub(a.c0, a.c1)), Fq::add(t, t)};
  }
  static inline Fq2 inv(const Fq2& a) {
    Fq n = Fq::add(Fq::sqr(a.c0), Fq::sqr(a.c1));
    Fq ni = Fq::inv(n);
    return Fq2{Fq::mul(a.c0, ni), Fq::neg(Fq::mul(a.c1, ni))};
  }
};

template <class F>
struct Affine {
  F x, y;  // (0, 0) encodes the point at infinity, as in snarkjs
  inline bool isZero() const { return x.isZero() && y.isZero(); }
};

template <class F>
struct Jacobian {
  F x, y, z;  // z == 0 is the point at infinity

  static inline Jacobian zero() { return Jacobian{F::one(), F::one(), F::zero()}; }
  inline bool isZero() const { return z.isZero(); }

  static inline Jacobian fromAffine(const Affine<F>& a) {
    if (a.isZero()) return zero();
    return Jacobian{a.x, a.y, F::one()};
  }

  // dbl-2009-l (a = 0)
  static inline Jacobian dbl(const Jacobian& p) {
    if (p.isZero()) return p;
    F A = F::sqr(p.x);
    F B = F::sqr(p.y);
    F C = F::sqr(B);
    F D = F::sub(F::sub(F::sqr(F::add(p.x, B)), A), C);
    D = F::dbl(D);
    F E = F::add(F::dbl(A), A);
    F Fv = F::sqr(E);
    Jacobian r;
    r.x = F::sub(Fv, F::dbl(D));
    F C8 = F::dbl(F::dbl(F::dbl(C)));
    r.y = F::sub(F::mul(E, F::sub(D, r.x)), C8);
    r.z = F::dbl(F::mul(p.y, p.z));
    return r;
  }

  // add-2007-bl
  static inline Jacobian add(const Jacobian& p, const Jacobian& q) {
    if (p.isZero()) return q;
    if (q.isZero()) return p;
    F Z1Z1 = F::sqr(p.z);
    F Z2Z2 = F::sqr(q.z);
    F U1 = F::mul(p.x, Z2Z2);
    F U2 = F::mul(q.x, Z1Z1);
    F S1 = F::mul(F::mul(p.y, q.z), Z2Z2);
    F S2 = F::mul(F::mul(q.y, p.z), Z1Z1);
    F H = F::sub(U2, U1);
    F rr = F::sub(S2, S1);
    if (H.isZero()) {
      if (rr.isZero()) return dbl(p);
      return zero();
    }
    rr = F::dbl(rr);
    F I = F::sqr(F::dbl(H));
    F J = F::mul(H, I);
    F V = F::mul(U1, I);
    Jacobian r;
    r.x = F::sub(F::sub(F::sqr(rr), J), F::dbl(V));
    r.y = F::sub(F::mul(rr, F::sub(V, r.x)), F::dbl(F::mul(S1, J)));
    r.z = F::mul(F::sub(F::sub(F::sqr(F::add(p.z, q.z)), Z1Z1), Z2Z2), H);
    return r;
  }

  // madd-2007-bl: mixed addition with an affine point
  static inline Jacobian addAffine(const Jacobian& p, const Affine<F>& q) {
    if (q.isZero()) return p;
    if (p.isZero()) return Jacobian{q.x, q.y, F::one()};
    F Z1Z1 = F::sqr(p.z);
    F U2 = F::mul(q.x, Z1Z1);
    F S2 = F::mul(F::mul(q.y, p.z), Z1Z1);
    F H = F::sub(U2, p.x);
    F rr = F::sub(S2, p.y);
    if (H.isZero()) {
      if (rr.isZero()) return dbl(p);
      return zero();
    }
    rr = F::dbl(rr);
    F HH = F::sqr(H);
    F I = F::dbl(F::dbl(HH));
    F J = F::mul(H, I);
    F V = F::mul(p.x, I);
    Jacobian r;
    r.x = F::sub(F::sub(F::sqr(rr), J), F::dbl(V));
    r.y = F::sub(F::mul(rr, F::sub(V, r.x)), F::dbl(F::mul(p.y, J)));
    r.z = F::sub(F::sub(F::sqr(F::add(p.z, H)), Z1Z1), HH);
    return r;
  }

  static inline Jacobian neg(const Jacobian& p) { return Jacobian{p.x, F::neg(p.y), p.z}; }

  // Double-and-add by a standard-form scalar; used only for the handful of blinding terms.
  static Jacobian mulScalar(const Jacobian& p, const U256& k) {
    Jacobian r = zero();
    for (int i = 255; i >= 0; --i) {
      r = dbl(r);
      if ((k.v[i >> 6] >> (i & 63)) & 1) r = add(r, p);
    }
    return r;
  }

  Affine<F> toAffine() const {
    if (isZero()) return Affine<F>{F::zero(), F::zero()};
    F zi = F::inv(z);
    F zi2 = F::sqr(zi);
    return Affine<F>{F::mul(x, zi2), F::mul(y, F::mul(zi2, zi))};
  }
};

using G1Affine = Affine<Fq>;
using G2Affine = Affine<Fq2>;
using G1 = Jacobian<Fq>;
using G2 = Jacobian<Fq2>;

static_assert(sizeof(G1Affine) == 64, "G1 affine layout must match the zkey");
static_assert(sizeof(G2Affine) == 128, "G2 affine layout must match the zkey");

// Curve equations: G1 y^2 = x^3 + 3, G2 y^2 = x^3 + 3/(9+u).
inline bool onCurve(const G1Affine& p) {
  if (p.isZero()) return true;
  Fq lhs = Fq::sqr(p.y);
  Fq rhs = Fq::add(Fq::mul(Fq::sqr(p.x), p.x), Fq::fromU64(3));
  return lhs == rhs;
}

inline const Fq2& twistB() {
  static const Fq2 b = Fq2::mul(Fq2{Fq::fromU64(3), Fq::zero()}, Fq2::inv(Fq2{Fq::fromU64(9), Fq::fromU64(1)}));
  return b;
}

inline bool onCurve(const G2Affine& p) {
  if (p.isZero()) return true;
  Fq2 lhs = Fq2::sqr(p.y);
  Fq2 rhs = Fq2::add(Fq2::mul(Fq2::sqr(p.x), p.x), twistB());
  return lhs == rhs;
}

}  // namespace np
