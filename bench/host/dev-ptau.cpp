// A development powers of tau for benchmarks, in the prepared form `snarkjs zkey new` reads.
//
// INSECURE BY DESIGN: one party draws tau, alpha and beta at random and computes every point from them
// directly, so whoever runs it could have kept them (this program does not, but nothing proves that).
// It exists because snarkjs's own path (new + contribute + prepare phase2) spends its time in group
// FFTs: over two hours on two cores at 2^18. Knowing the secrets, the Lagrange basis is a scalar
// formula, and every point is one fixed-base multiplication of a generator: about a minute at 2^18.
// Keys made from it are for measuring provers only; production keys come from a real ceremony.
//
// The file matches what preparePhase2 writes (sections 1–7 and 12–15, points as little-endian
// Montgomery affine coordinates, (0, 0) for infinity), including its one quirk: section 12 has one
// power more than the others, taken from tau^0 … tau^(2n-2) with the last point zero.
// test/bench/dev-ptau.test.ts checks sections 12–15 byte for byte against snarkjs's preparePhase2 of
// this file's own sections 2–5.
//   dev-ptau <power> <out.ptau>
// Built by bench/large-circuit.ts from the addon's field and curve code (native-prover/src).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../../native-prover/src/curve.hpp"
#include "../../native-prover/src/fft.hpp"
#include "../../native-prover/src/fileio.hpp"
#include "../../native-prover/src/pool.hpp"

namespace {

using namespace np;

U256 decimal(const char* s) {
  U256 x{{0, 0, 0, 0}};
  for (; *s; ++s) {
    unsigned __int128 carry = (unsigned)(*s - '0');
    for (int i = 0; i < 4; ++i) {
      unsigned __int128 t = (unsigned __int128)x.v[i] * 10 + carry;
      x.v[i] = (u64)t;
      carry = t >> 64;
    }
  }
  return x;
}

Fq fq(const char* s) { return Fq::fromStd(decimal(s).v); }

// The generators snarkjs (ffjavascript's bn128) uses.
G1 g1Generator() { return G1{Fq::fromU64(1), Fq::fromU64(2), Fq::one()}; }
G2 g2Generator() {
  return G2{
      Fq2{fq("10857046999023057135944570762232829481370756359578518086990519993285655852781"),
          fq("11559732032986387107991004021392285783925812861821192530917403151452391805634")},
      Fq2{fq("8495653923123431417604973247489272438418190587263600148770280649306958101930"),
          fq("4082367875863433681332203403145435568316851327593401208105741076214120093531")},
      Fq2::one()};
}

// A uniformly random scalar below 2^252 < r, from the system's entropy source.
Fr randomScalar() {
  std::random_device rd;
  u64 w[4];
  for (auto& x : w) x = ((u64)rd() << 32) | rd();
  w[3] &= (1ULL << 60) - 1;
  return Fr::fromStd(w);
}

// Jacobian -> affine for a run of points with one inversion (Montgomery's trick).
template <class F>
void toAffine(const Jacobian<F>* in, Affine<F>* out, size_t n) {
  std::vector<F> prefix(n);
  F acc = F::one();
  for (size_t i = 0; i < n; ++i) {
    prefix[i] = acc;
    if (!in[i].isZero()) acc = F::mul(acc, in[i].z);
  }
  F inv = F::inv(acc);
  for (size_t i = n; i-- > 0;) {
    if (in[i].isZero()) {
      out[i] = Affine<F>{F::zero(), F::zero()};
      continue;
    }
    F zi = F::mul(inv, prefix[i]);
    inv = F::mul(inv, in[i].z);
    F zi2 = F::sqr(zi);
    out[i] = Affine<F>{F::mul(in[i].x, zi2), F::mul(in[i].y, F::mul(zi2, zi))};
  }
}

// k·G for a fixed G: a table of d·2^(8j)·G for every byte position j and byte value d, so a
// multiplication is at most 32 mixed additions.
template <class F>
class FixedBase {
 public:
  explicit FixedBase(Jacobian<F> g) : table_(32 * 256) {
    std::vector<Jacobian<F>> jac(32 * 256);
    for (size_t j = 0; j < 32; ++j) {
      jac[j * 256] = Jacobian<F>::zero();
      for (size_t d = 1; d < 256; ++d) jac[j * 256 + d] = Jacobian<F>::add(jac[j * 256 + d - 1], g);
      for (int i = 0; i < 8; ++i) g = Jacobian<F>::dbl(g);
    }
    toAffine(jac.data(), table_.data(), jac.size());
  }

  Jacobian<F> mul(const Fr& k) const {
    U256 s = k.toStd();
    Jacobian<F> r = Jacobian<F>::zero();
    for (size_t j = 0; j < 32; ++j) {
      unsigned d = (unsigned)(s.v[j >> 3] >> ((j & 7) * 8)) & 0xff;
      if (d != 0) r = Jacobian<F>::addAffine(r, table_[j * 256 + d]);
    }
    return r;
  }

  // The affine points k·G for every k, on `threads` threads.
  std::vector<Affine<F>> mulMany(const std::vector<Fr>& ks, unsigned threads) const {
    std::vector<Affine<F>> out(ks.size());
    parallelFor(ks.size(), threads, 4096, [&](size_t b, size_t e) {
      std::vector<Jacobian<F>> jac(e - b);
      for (size_t i = b; i < e; ++i) jac[i - b] = mul(ks[i]);
      toAffine(jac.data(), out.data() + b, e - b);
    });
    return out;
  }

 private:
  std::vector<Affine<F>> table_;
};

// x^0 … x^(n-1), each times `factor`.
std::vector<Fr> powers(const Fr& x, size_t n, const Fr& factor) {
  std::vector<Fr> out(n);
  Fr acc = factor;
  for (size_t i = 0; i < n; ++i) {
    out[i] = acc;
    acc = Fr::mul(acc, x);
  }
  return out;
}

// In place: every element replaced by its inverse (all nonzero), one field inversion in all.
void invertAll(std::vector<Fr>& xs) {
  std::vector<Fr> prefix(xs.size());
  Fr acc = Fr::one();
  for (size_t i = 0; i < xs.size(); ++i) {
    prefix[i] = acc;
    acc = Fr::mul(acc, xs[i]);
  }
  Fr inv = Fr::inv(acc);
  for (size_t i = xs.size(); i-- > 0;) {
    Fr xi = Fr::mul(inv, prefix[i]);
    inv = Fr::mul(inv, xs[i]);
    xs[i] = xi;
  }
}

// What snarkjs's lagrangeEvaluations (an inverse FFT) makes of the points tau^0·G … tau^(n-1)·G over
// the 2^p domain, as scalars of G: out_k = (1/n) Σ_j tau^j ω^(-jk) = L_k(tau) = ω^k (tau^n - 1) / (n (tau - ω^k)).
// With `lastZero` the input's last point is zero, as in section 12's top power: out_k loses (1/n) tau^(n-1) ω^k.
void appendLagrange(std::vector<Fr>& out, const Fr& tau, unsigned p, bool lastZero) {
  const size_t n = (size_t)1 << p;
  const Fr w = frDomain().rootOf2k[p];
  std::vector<Fr> wk = powers(w, n, Fr::one());
  std::vector<Fr> den(n);
  for (size_t k = 0; k < n; ++k) den[k] = Fr::sub(tau, wk[k]);
  invertAll(den);
  U256 nStd{{n, 0, 0, 0}};
  Fr nInv = Fr::inv(Fr::fromStd(nStd.v));
  Fr tauN = Fr::pow(tau, nStd);
  Fr c = Fr::mul(Fr::sub(tauN, Fr::one()), nInv);
  Fr tail = Fr::mul(Fr::pow(tau, U256{{n - 1, 0, 0, 0}}), nInv);
  for (size_t k = 0; k < n; ++k) {
    Fr l = Fr::mul(Fr::mul(c, wk[k]), den[k]);
    if (lastZero) l = Fr::sub(l, Fr::mul(tail, wk[k]));
    out.push_back(l);
  }
}

std::vector<Fr> scaled(std::vector<Fr> xs, const Fr& factor) {
  for (auto& x : xs) x = Fr::mul(x, factor);
  return xs;
}

class PtauWriter {
 public:
  explicit PtauWriter(const std::string& path) : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
    if (!out_) throw ProverError("IO", "cannot write " + path);
    out_.write("ptau", 4);
    u32(1);   // version
    u32(11);  // sections 1-7 and 12-15
  }

  void section(uint32_t type, const std::vector<uint8_t>& bytes) { section(type, bytes.data(), bytes.size()); }

  template <class F>
  void section(uint32_t type, const std::vector<Affine<F>>& points) {
    section(type, reinterpret_cast<const uint8_t*>(points.data()), points.size() * sizeof(Affine<F>));
  }

  void close() {
    out_.close();
    if (!out_) throw ProverError("IO", "cannot write " + path_);
  }

 private:
  void u32(uint32_t v) { out_.write(reinterpret_cast<const char*>(&v), 4); }
  void section(uint32_t type, const uint8_t* data, size_t size) {
    u32(type);
    uint64_t s = size;
    out_.write(reinterpret_cast<const char*>(&s), 8);
    out_.write(reinterpret_cast<const char*>(data), (std::streamsize)size);
    if (!out_) throw ProverError("IO", "cannot write " + path_);
  }

  std::string path_;
  std::ofstream out_;
};

template <class T>
void putLE(std::vector<uint8_t>& b, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) b.push_back((uint8_t)(v >> (8 * i)));
}

void build(unsigned power, const std::string& path) {
  const auto start = std::chrono::steady_clock::now();
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const size_t n = (size_t)1 << power;
  auto step = [&](const char* what, size_t points) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "dev-ptau 2^%u: %s (%zu points) at %.1f s\n", power, what, points, s);
  };
  const Fr tau = randomScalar(), alpha = randomScalar(), beta = randomScalar();
  const FixedBase<Fq> g1(g1Generator());
  const FixedBase<Fq2> g2(g2Generator());

  PtauWriter out(path);
  std::vector<uint8_t> header;
  putLE<uint32_t>(header, 32);
  for (u64 w : FqTag::P) putLE<u64>(header, w);
  putLE<uint32_t>(header, power);
  putLE<uint32_t>(header, power);
  out.section(1, header);

  std::vector<Fr> tauPowers = powers(tau, 2 * n - 1, Fr::one());
  out.section(2, g1.mulMany(tauPowers, threads));
  step("tauG1", tauPowers.size());
  tauPowers.resize(n);
  out.section(3, g2.mulMany(tauPowers, threads));
  step("tauG2", n);
  out.section(4, g1.mulMany(scaled(tauPowers, alpha), threads));
  out.section(5, g1.mulMany(scaled(tauPowers, beta), threads));
  step("alphaTauG1, betaTauG1", 2 * n);
  out.section(6, g2.mulMany(std::vector<Fr>{beta}, 1));
  std::vector<uint8_t> contributions;
  putLE<uint32_t>(contributions, 0);
  out.section(7, contributions);

  std::vector<Fr> lagrange;
  for (unsigned p = 0; p <= power; ++p) appendLagrange(lagrange, tau, p, false);
  std::vector<Fr> top = lagrange;
  appendLagrange(top, tau, power + 1, true);
  out.section(12, g1.mulMany(top, threads));
  step("lagrange tauG1", top.size());
  top.clear();
  out.section(13, g2.mulMany(lagrange, threads));
  step("lagrange tauG2", lagrange.size());
  out.section(14, g1.mulMany(scaled(lagrange, alpha), threads));
  out.section(15, g1.mulMany(scaled(lagrange, beta), threads));
  step("lagrange alphaTauG1, betaTauG1", 2 * lagrange.size());
  out.close();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: dev-ptau <power 1..27> <out.ptau>\n");
    return EXIT_FAILURE;
  }
  long power = std::strtol(argv[1], nullptr, 10);
  if (power < 1 || power > 27) {
    std::fprintf(stderr, "power must be between 1 and 27\n");
    return EXIT_FAILURE;
  }
  return np::runCommand([&] { build((unsigned)power, argv[2]); });
}
