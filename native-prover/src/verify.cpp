// Groth16 verification: parse the decimal lists, check every point, one multi-Miller loop and one final
// exponentiation for e(-A, B) e(alpha, beta) e(vk_x, gamma) e(C, delta) = 1.
#include "verify.hpp"

#include "prover.hpp"

namespace np {

namespace {

// vk_x in signed six-bit windows: digits in [-32, 32), a table of 1..32 times each window's base.
constexpr unsigned kWindowBits = 6;
constexpr unsigned kWindows = (254 + kWindowBits) / kWindowBits;  // r < 2^254, plus the last carry
constexpr unsigned kPerWindow = 1u << (kWindowBits - 1);

// Splits a comma-separated list of decimal integers below 2^256; false on anything else.
bool parseDecimals(const std::string& s, std::vector<U256>* out) {
  out->clear();
  if (s.empty()) return true;
  size_t i = 0;
  while (true) {
    U256 x{{0, 0, 0, 0}};
    size_t digits = 0;
    while (i < s.size() && s[i] != ',') {
      const char ch = s[i++];
      if (ch < '0' || ch > '9' || ++digits > 78) return false;
      // x = 10 x + d, refusing a carry out of the top limb.
      u64 carry = (u64)(ch - '0');
      for (int k = 0; k < 4; ++k) {
        u128 t = (u128)x.v[k] * 10 + carry;
        x.v[k] = (u64)t;
        carry = (u64)(t >> 64);
      }
      if (carry) return false;
    }
    if (digits == 0) return false;
    out->push_back(x);
    if (i == s.size()) return true;
    ++i;  // the comma
  }
}

bool isOne(const U256& x) { return x.v[0] == 1 && (x.v[1] | x.v[2] | x.v[3]) == 0; }
bool isZeroU(const U256& x) { return (x.v[0] | x.v[1] | x.v[2] | x.v[3]) == 0; }

enum class PointError { None, OutOfField, NotAffine, Infinity, NotOnCurve, NotInSubgroup };

const char* reasonOf(PointError e) {
  switch (e) {
    case PointError::OutOfField:
      return "coordinate_out_of_field";
    case PointError::NotAffine:
      return "not_affine";
    case PointError::Infinity:
      return "point_at_infinity";
    case PointError::NotOnCurve:
      return "not_on_curve";
    case PointError::NotInSubgroup:
      return "not_in_subgroup";
    default:
      return "";
  }
}

// G1 from (x, y, z) with z = 1 (snarkjs writes affine points so); G1 has cofactor one, so a point on
// the curve is in the group.
PointError readG1(const U256* n, G1Affine* out, bool allowInfinity) {
  for (int k = 0; k < 3; ++k) {
    if (!Fq::isCanonical(n[k].v)) return PointError::OutOfField;
  }
  if (isZeroU(n[2])) {
    if (!allowInfinity) return PointError::Infinity;
    *out = G1Affine{Fq::zero(), Fq::zero()};
    return PointError::None;
  }
  if (!isOne(n[2])) return PointError::NotAffine;
  G1Affine p{Fq::fromStd(n[0].v), Fq::fromStd(n[1].v)};
  // onCurve takes (0, 0) for infinity (the zkey form); written with z = 1 it is an off-curve point.
  if (p.isZero() || !onCurve(p)) return PointError::NotOnCurve;
  *out = p;
  return PointError::None;
}

// G2 from (x.c0, x.c1, y.c0, y.c1, z.c0, z.c1) with z = 1: on the twist and in the order-r subgroup.
PointError readG2(const U256* n, G2Affine* out) {
  for (int k = 0; k < 6; ++k) {
    if (!Fq::isCanonical(n[k].v)) return PointError::OutOfField;
  }
  if (isZeroU(n[4]) && isZeroU(n[5])) return PointError::Infinity;
  if (!isOne(n[4]) || !isZeroU(n[5])) return PointError::NotAffine;
  G2Affine q{Fq2{Fq::fromStd(n[0].v), Fq::fromStd(n[1].v)}, Fq2{Fq::fromStd(n[2].v), Fq::fromStd(n[3].v)}};
  if (q.isZero() || !onCurve(q)) return PointError::NotOnCurve;
  if (!inG2Subgroup(q)) return PointError::NotInSubgroup;
  *out = q;
  return PointError::None;
}

// Jacobian -> affine for many points with one inversion (Montgomery's trick); none may be infinity.
std::vector<G1Affine> normalize(const std::vector<G1>& pts) {
  std::vector<Fq> prefix(pts.size());
  Fq acc = Fq::one();
  for (size_t i = 0; i < pts.size(); ++i) {
    prefix[i] = acc;
    acc = Fq::mul(acc, pts[i].z);
  }
  Fq inv = Fq::inv(acc);
  std::vector<G1Affine> out(pts.size());
  for (size_t i = pts.size(); i-- > 0;) {
    Fq zi = Fq::mul(inv, prefix[i]);
    inv = Fq::mul(inv, pts[i].z);
    Fq zi2 = Fq::sqr(zi);
    out[i] = G1Affine{Fq::mul(pts[i].x, zi2), Fq::mul(pts[i].y, Fq::mul(zi2, zi))};
  }
  return out;
}

FixedBaseTable buildFixedBase(const G1Affine& p) {
  FixedBaseTable t;
  if (p.isZero()) return t;
  std::vector<G1> pts;
  pts.reserve(kWindows * kPerWindow);
  G1 base = G1::fromAffine(p);
  for (unsigned k = 0; k < kWindows; ++k) {
    G1 e = base;
    for (unsigned j = 1; j <= kPerWindow; ++j) {
      pts.push_back(e);
      e = G1::add(e, base);
    }
    for (unsigned b = 0; b < kWindowBits; ++b) base = G1::dbl(base);
  }
  // j 2^(6k) P is never infinity: P has prime order r, which divides no j 2^(6k) with j <= 32.
  t.points = normalize(pts);
  return t;
}

// Bits [bit, bit + kWindowBits) of a 256-bit value.
unsigned windowAt(const U256& s, unsigned bit) {
  const unsigned limb = bit >> 6, shift = bit & 63;
  u64 w = s.v[limb] >> shift;
  if (shift + kWindowBits > 64 && limb < 3) w |= s.v[limb + 1] << (64 - shift);
  return (unsigned)w & ((1u << kWindowBits) - 1);
}

// IC0 + sum s_i IC_i, the scalars standard-form and below r: each scalar recoded into signed digits
// d_k in [-32, 32) with s = sum d_k 2^(6k), one table lookup and mixed addition per non-zero digit.
G1 publicInputSum(const VerifyingKey& vk, const std::vector<U256>& signals) {
  G1 acc = G1::fromAffine(vk.ic0);
  for (size_t i = 0; i < signals.size(); ++i) {
    const FixedBaseTable& t = vk.ic[i];
    if (t.points.empty()) continue;
    unsigned carry = 0;
    for (unsigned k = 0; k < kWindows; ++k) {
      int d = (int)(windowAt(signals[i], k * kWindowBits) + carry);
      carry = d >= (int)kPerWindow ? 1 : 0;
      d -= (int)(carry << kWindowBits);
      if (d > 0) acc = G1::addAffine(acc, t.points[k * kPerWindow + (unsigned)d - 1]);
      if (d < 0) {
        const G1Affine& p = t.points[k * kPerWindow + (unsigned)(-d) - 1];
        acc = G1::addAffine(acc, G1Affine{p.x, Fq::neg(p.y)});
      }
    }
  }
  return acc;
}

[[noreturn]] void badKey(const std::string& what) { throw ProverError("VKEY_INVALID", "verification key: " + what); }

}  // namespace

std::shared_ptr<const VerifyingKey> prepareVerifyingKey(const std::string& numbers) {
  std::vector<U256> n;
  if (!parseDecimals(numbers, &n)) badKey("expected decimal integers below 2^256");
  // alpha 3, beta/gamma/delta 6 each, then at least IC0.
  if (n.size() < 24 || (n.size() - 21) % 3 != 0) badKey("wrong number of coordinates");
  auto vk = std::make_shared<VerifyingKey>();
  G1Affine alpha;
  G2Affine beta, gamma, delta;
  PointError e;
  if ((e = readG1(&n[0], &alpha, false)) != PointError::None) badKey(std::string("alpha: ") + reasonOf(e));
  if ((e = readG2(&n[3], &beta)) != PointError::None) badKey(std::string("beta: ") + reasonOf(e));
  if ((e = readG2(&n[9], &gamma)) != PointError::None) badKey(std::string("gamma: ") + reasonOf(e));
  if ((e = readG2(&n[15], &delta)) != PointError::None) badKey(std::string("delta: ") + reasonOf(e));
  const size_t nIc = (n.size() - 21) / 3;
  std::vector<G1Affine> ic(nIc);
  for (size_t i = 0; i < nIc; ++i) {
    if ((e = readG1(&n[21 + 3 * i], &ic[i], true)) != PointError::None) {
      badKey("IC[" + std::to_string(i) + "]: " + reasonOf(e));
    }
  }
  vk->nPublic = (unsigned)(nIc - 1);
  vk->ic0 = ic[0];
  vk->ic.reserve(nIc - 1);
  for (size_t i = 1; i < nIc; ++i) vk->ic.push_back(buildFixedBase(ic[i]));
  vk->gamma = prepareG2(gamma);
  vk->delta = prepareG2(delta);
  normalizeLines(vk->gamma);
  normalizeLines(vk->delta);
  const G2Prepared betaLines = prepareG2(beta);
  const MillerPair ab{&alpha, &betaLines};
  vk->alphaBeta = multiMillerLoop(&ab, 1);
  return vk;
}

std::string verifyProof(const VerifyingKey& vk, const std::string& publicSignals, const std::string& proof) {
  std::vector<U256> signals, coords;
  if (!parseDecimals(publicSignals, &signals)) {
    throw ProverError("VERIFY_INPUT_INVALID", "public signals must be decimal integers below 2^256");
  }
  if (!parseDecimals(proof, &coords) || coords.size() != 12) {
    throw ProverError("VERIFY_INPUT_INVALID", "a proof is twelve decimal coordinates");
  }
  if (signals.size() != vk.nPublic) return "signal_count_mismatch";
  for (const U256& s : signals) {
    if (!Fr::isCanonical(s.v)) return "signal_out_of_field";
  }
  G1Affine a, c;
  G2Affine b;
  PointError e;
  if ((e = readG1(&coords[0], &a, false)) != PointError::None) return reasonOf(e);
  if ((e = readG1(&coords[9], &c, false)) != PointError::None) return reasonOf(e);
  if ((e = readG2(&coords[3], &b)) != PointError::None) return reasonOf(e);

  const G1Affine negA{a.x, Fq::neg(a.y)};
  const G1Affine vkx = publicInputSum(vk, signals).toAffine();
  const G2Prepared bLines = prepareG2(b);
  MillerPair pairs[3];
  size_t n = 0;
  pairs[n++] = MillerPair{&negA, &bLines};
  pairs[n++] = MillerPair{&c, &vk.delta};
  // e(O, gamma) = 1: a vk_x at infinity drops out of the product.
  if (!vkx.isZero()) pairs[n++] = MillerPair{&vkx, &vk.gamma};
  return pairingProductIsOne(pairs, n, &vk.alphaBeta) ? "" : "pairing_mismatch";
}

bool pairingProductCheck(const std::vector<G1Affine>& g1, const std::vector<G2Affine>& g2) {
  std::vector<G2Prepared> lines;
  std::vector<MillerPair> pairs;
  lines.reserve(g2.size());
  for (size_t i = 0; i < g1.size() && i < g2.size(); ++i) {
    if (g1[i].isZero() || g2[i].isZero()) continue;
    lines.push_back(prepareG2(g2[i]));
  }
  size_t k = 0;
  for (size_t i = 0; i < g1.size() && i < g2.size(); ++i) {
    if (g1[i].isZero() || g2[i].isZero()) continue;
    pairs.push_back(MillerPair{&g1[i], &lines[k++]});
  }
  return pairingProductIsOne(pairs.data(), pairs.size());
}

}  // namespace np
