// zkey/wtns parsing and the Groth16 proving pipeline, following snarkjs's groth16_prove.js step by step.
#include "prover.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "fft.hpp"
#include "msm.hpp"
#include "pool.hpp"

#ifdef NP_PROFILE
#include <chrono>
#include <cstdio>
#define NP_MARK(label)                                                                                 \
  do {                                                                                                 \
    auto now_ = std::chrono::steady_clock::now();                                                      \
    std::fprintf(stderr, "%-10s %8.2f ms\n", label,                                                   \
                 std::chrono::duration<double, std::milli>(now_ - profT0_).count());                    \
    profT0_ = now_;                                                                                    \
  } while (0)
#else
#define NP_MARK(label) \
  do {                 \
  } while (0)
#endif

namespace np {

namespace {

[[noreturn]] void zkeyError(const std::string& msg) { throw ProverError("ZKEY_INVALID", "invalid zkey: " + msg); }
[[noreturn]] void witnessError(const std::string& msg) {
  throw ProverError("WITNESS_INVALID", "invalid witness: " + msg);
}

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  virtual void read(uint64_t off, void* dst, size_t len) const = 0;
};

class MemorySource : public ByteSource {
 public:
  MemorySource(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  uint64_t size() const override { return n_; }
  void read(uint64_t off, void* dst, size_t len) const override {
    if (off > n_ || len > n_ - off) zkeyError("truncated data");
    if (len) std::memcpy(dst, d_ + off, len);
  }

 private:
  const uint8_t* d_;
  size_t n_;
};

class FileSource : public ByteSource {
 public:
  explicit FileSource(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw ProverError("IO", "cannot open " + path + ": " + std::strerror(errno));
    struct stat st;
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw ProverError("IO", "not a regular file: " + path);
    }
    size_ = (uint64_t)st.st_size;
  }
  ~FileSource() override { ::close(fd_); }
  uint64_t size() const override { return size_; }
  void read(uint64_t off, void* dst, size_t len) const override {
    if (off > size_ || len > size_ - off) zkeyError("truncated file");
    auto* p = static_cast<uint8_t*>(dst);
    while (len) {
      ssize_t r = ::pread(fd_, p, len, (off_t)off);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) throw ProverError("IO", std::string("read failed: ") + (r < 0 ? std::strerror(errno) : "EOF"));
      p += r;
      off += (uint64_t)r;
      len -= (size_t)r;
    }
  }

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

struct Section {
  uint64_t offset;
  uint64_t size;
};

// The iden3 binary container: magic, u32 version, u32 section count, then (u32 type, u64 size, bytes)*.
std::map<uint32_t, std::vector<Section>> readSections(const ByteSource& src, const char magic[4],
                                                      void (*fail)(const std::string&)) {
  if (src.size() < 12) fail("file too short");
  char m[4];
  src.read(0, m, 4);
  if (std::memcmp(m, magic, 4) != 0) fail(std::string("not a ") + std::string(magic, 4) + " file");
  uint32_t version = 0, nSections = 0;
  src.read(4, &version, 4);
  src.read(8, &nSections, 4);
  std::map<uint32_t, std::vector<Section>> out;
  uint64_t pos = 12;
  for (uint32_t i = 0; i < nSections; ++i) {
    if (src.size() - pos < 12) fail("section table runs past end of file");
    uint32_t type = 0;
    uint64_t size = 0;
    src.read(pos, &type, 4);
    src.read(pos + 4, &size, 8);
    pos += 12;
    if (size > src.size() - pos) fail("section " + std::to_string(type) + " runs past end of file");
    out[type].push_back(Section{pos, size});
    pos += size;
  }
  return out;
}

const Section& uniqueSection(const std::map<uint32_t, std::vector<Section>>& sections, uint32_t id,
                             void (*fail)(const std::string&)) {
  auto it = sections.find(id);
  if (it == sections.end() || it->second.empty()) fail("missing section " + std::to_string(id));
  if (it->second.size() != 1) fail("duplicate section " + std::to_string(id));
  return it->second[0];
}

bool equalsModulus(const uint8_t* bytes, const u64 p[4]) {
  u64 v[4];
  std::memcpy(v, bytes, 32);
  return v[0] == p[0] && v[1] == p[1] && v[2] == p[2] && v[3] == p[3];
}

void zkeyFail(const std::string& m) { zkeyError(m); }
void witnessFail(const std::string& m) { witnessError(m); }

bool canonicalG1(const G1Affine& p) { return Fq::isCanonical(p.x.v) && Fq::isCanonical(p.y.v); }
bool canonicalG2(const G2Affine& p) {
  return Fq::isCanonical(p.x.c0.v) && Fq::isCanonical(p.x.c1.v) && Fq::isCanonical(p.y.c0.v) &&
         Fq::isCanonical(p.y.c1.v);
}

template <class P>
void readPoints(const ByteSource& src, const Section& s, size_t count, std::vector<P>& out, const char* name,
                unsigned threads) {
  if (s.size != (uint64_t)count * sizeof(P)) {
    zkeyError(std::string("section ") + name + " has " + std::to_string(s.size) + " bytes, expected " +
              std::to_string((uint64_t)count * sizeof(P)));
  }
  out.resize(count);
  src.read(s.offset, out.data(), count * sizeof(P));
  std::vector<char> bad(std::max<size_t>(1, threads * 4), 0);
  size_t nChunks = bad.size();
  size_t per = (count + nChunks - 1) / nChunks;
  ThreadPool::instance().run(nChunks, threads, [&](size_t c) {
    size_t e = std::min(count, (c + 1) * per);
    for (size_t i = c * per; i < e; ++i) {
      bool canonical;
      if constexpr (sizeof(P) == sizeof(G1Affine)) {
        canonical = canonicalG1(out[i]);
      } else {
        canonical = canonicalG2(out[i]);
      }
      if (!canonical || !onCurve(out[i])) {
        bad[c] = 1;
        return;
      }
    }
  });
  for (char b : bad) {
    if (b) zkeyError(std::string("section ") + name + " holds a point that is not on the curve");
  }
}

template <class P>
P readPoint(const ByteSource& src, uint64_t& pos, const char* name) {
  P p;
  src.read(pos, &p, sizeof(P));
  pos += sizeof(P);
  bool ok;
  if constexpr (sizeof(P) == sizeof(G1Affine)) {
    ok = canonicalG1(p);
  } else {
    ok = canonicalG2(p);
  }
  if (!ok || !onCurve(p)) zkeyError(std::string("header point ") + name + " is not on the curve");
  return p;
}

// Shifted copies trade memory and load time for proving time: small keys get a copy for every window,
// large ones up to four times the key's own points, and only where the planner expects them to pay off.
// They are planned for a proof on one thread, as a busy pool runs them (see prove). On a 16-core host,
// 16 proofs at once on this shape against one planned for 16 threads: threshold 485 against 296
// proofs/s, membership 103 against 72; a lone proof on all 16 cores gave back 5 % (threshold) and
// 19 % (membership) of its speed, and the 2^16 circuit was within noise both ways (docs/zk.md).
TableShape shiftedShape(size_t n, size_t pointBytes) {
  const size_t budget = std::max<size_t>(16u << 20, 4 * n * pointBytes);
  return planTable(n, pointBytes, budget, 1);
}

template <class F>
std::shared_ptr<const MsmTable<F>> plainTable(std::vector<Affine<F>>&& points, unsigned threads) {
  TableShape shape = planTable(points.size(), sizeof(Affine<F>), 0, threads);
  return std::make_shared<const MsmTable<F>>(buildTable(std::move(points), shape, threads));
}

template <class F>
std::shared_ptr<const MsmTable<F>> shiftedTable(const std::shared_ptr<const MsmTable<F>>& plain,
                                                unsigned threads) {
  TableShape shape = shiftedShape(plain->n, sizeof(Affine<F>));
  if (shape.copies == 1) return plain;  // no copies pay off here: share the plain table
  std::vector<Affine<F>> bases(plain->points.begin(), plain->points.begin() + plain->n);
  return std::make_shared<const MsmTable<F>>(buildTable(std::move(bases), shape, threads));
}

std::shared_ptr<const ProvingKey> loadZkey(const ByteSource& src, unsigned threads, bool precompute) {
  auto sections = readSections(src, "zkey", zkeyFail);
  auto pk = std::make_shared<ProvingKey>();

  const Section& s1 = uniqueSection(sections, 1, zkeyFail);
  if (s1.size < 4) zkeyError("header section too short");
  uint32_t protocol = 0;
  src.read(s1.offset, &protocol, 4);
  if (protocol != 1) zkeyError("protocol " + std::to_string(protocol) + " is not groth16");

  const Section& s2 = uniqueSection(sections, 2, zkeyFail);
  const uint64_t headerSize = 4 + 32 + 4 + 32 + 12 + 3 * 64 + 3 * 128;
  if (s2.size != headerSize) zkeyError("groth16 header has unexpected size");
  uint8_t head[4 + 32 + 4 + 32 + 12];
  src.read(s2.offset, head, sizeof(head));
  uint32_t n8q, n8r;
  std::memcpy(&n8q, head, 4);
  std::memcpy(&n8r, head + 36, 4);
  if (n8q != 32 || n8r != 32 || !equalsModulus(head + 4, FqTag::P) || !equalsModulus(head + 40, FrTag::P)) {
    zkeyError("curve is not bn128");
  }
  std::memcpy(&pk->nVars, head + 72, 4);
  std::memcpy(&pk->nPublic, head + 76, 4);
  std::memcpy(&pk->domainSize, head + 80, 4);
  if (pk->nVars == 0 || pk->nPublic >= pk->nVars) zkeyError("inconsistent variable counts");
  const FrDomainConstants& dc = frDomain();
  if (pk->domainSize < 2 || (pk->domainSize & (pk->domainSize - 1)) != 0 ||
      pk->domainSize > (1u << dc.s)) {
    zkeyError("domain size is not a supported power of two");
  }
  pk->power = log2Exact(pk->domainSize);
  uint64_t pos = s2.offset + sizeof(head);
  pk->alpha1 = readPoint<G1Affine>(src, pos, "alpha1");
  pk->beta1 = readPoint<G1Affine>(src, pos, "beta1");
  pk->beta2 = readPoint<G2Affine>(src, pos, "beta2");
  pk->gamma2 = readPoint<G2Affine>(src, pos, "gamma2");
  pk->delta1 = readPoint<G1Affine>(src, pos, "delta1");
  pk->delta2 = readPoint<G2Affine>(src, pos, "delta2");

  // Coefficients of the A and B matrices (C is implied by A*B on the domain).
  const Section& s4 = uniqueSection(sections, 4, zkeyFail);
  if (s4.size < 4) zkeyError("coefficient section too short");
  uint32_t nCoef = 0;
  src.read(s4.offset, &nCoef, 4);
  if (s4.size != 4 + (uint64_t)nCoef * 44) zkeyError("coefficient section has unexpected size");
  {
    std::vector<uint8_t> raw((size_t)nCoef * 44);
    src.read(s4.offset + 4, raw.data(), raw.size());
    pk->coefs.resize(nCoef);
    for (uint32_t i = 0; i < nCoef; ++i) {
      const uint8_t* p = raw.data() + (size_t)i * 44;
      Coef& c = pk->coefs[i];
      std::memcpy(&c.matrix, p, 4);
      std::memcpy(&c.constraint, p + 4, 4);
      std::memcpy(&c.signal, p + 8, 4);
      std::memcpy(c.value.v, p + 12, 32);
      if (c.matrix > 1 || c.constraint >= pk->domainSize || c.signal >= pk->nVars || !Fr::isCanonical(c.value.v)) {
        zkeyError("coefficient " + std::to_string(i) + " is out of range");
      }
    }
    std::stable_sort(pk->coefs.begin(), pk->coefs.end(),
                     [](const Coef& a, const Coef& b) { return a.constraint < b.constraint; });
  }

  {
    std::vector<G1Affine> a, b1, c, h;
    std::vector<G2Affine> b2;
    readPoints(src, uniqueSection(sections, 5, zkeyFail), pk->nVars, a, "A", threads);
    readPoints(src, uniqueSection(sections, 6, zkeyFail), pk->nVars, b1, "B1", threads);
    readPoints(src, uniqueSection(sections, 7, zkeyFail), pk->nVars, b2, "B2", threads);
    readPoints(src, uniqueSection(sections, 8, zkeyFail), pk->nVars - pk->nPublic - 1, c, "C", threads);
    readPoints(src, uniqueSection(sections, 9, zkeyFail), pk->domainSize, h, "H", threads);
    auto set = std::make_shared<MsmSet>();
    set->A = plainTable(std::move(a), threads);
    set->B1 = plainTable(std::move(b1), threads);
    set->B2 = plainTable(std::move(b2), threads);
    set->C = plainTable(std::move(c), threads);
    set->H = plainTable(std::move(h), threads);
    pk->publish(std::move(set));
  }
  if (precompute) precomputeTables(*pk, threads);

  // Domain tables: snarkjs evaluates on the coset shifted by the 2n-th root of unity (Fr.shift at 2^s).
  const size_t n = pk->domainSize;
  Fr w = dc.rootOf2k[pk->power];
  Fr inc = pk->power == dc.s ? dc.shift : dc.rootOf2k[pk->power + 1];
  pk->roots.resize(n / 2);
  pk->cosetKey.resize(n);
  Fr nInv = Fr::inv(Fr::fromU64(n));
  size_t nChunks = std::max<size_t>(1, std::min<size_t>(threads * 4, n / 1024));
  size_t per = (n + nChunks - 1) / nChunks;
  ThreadPool::instance().run(nChunks, threads, [&](size_t c) {
    size_t b = c * per, e = std::min(n, b + per);
    if (b >= e) return;
    U256 eb{{b, 0, 0, 0}};
    Fr rw = Fr::pow(w, eb);
    Fr rk = Fr::mul(Fr::pow(inc, eb), nInv);
    for (size_t i = b; i < e; ++i) {
      if (i < n / 2) pk->roots[i] = rw;
      pk->cosetKey[i] = rk;
      rw = Fr::mul(rw, w);
      rk = Fr::mul(rk, inc);
    }
  });
  return pk;
}

Fr randomScalar() {
  for (;;) {
    U256 x;
    uint8_t* p = reinterpret_cast<uint8_t*>(x.v);
    size_t got = 0;
    while (got < sizeof(x.v)) {
      ssize_t r = getrandom(p + got, sizeof(x.v) - got, 0);
      if (r < 0) {
        if (errno == EINTR) continue;
        throw ProverError("RANDOMNESS", std::string("getrandom failed: ") + std::strerror(errno));
      }
      got += (size_t)r;
    }
    x.v[3] &= (1ULL << 62) - 1;  // r < 2^254: rejection sampling below keeps the draw uniform
    if (Fr::isCanonical(x.v)) return Fr::fromStd(x.v);
  }
}

std::string g1Json(const G1& p) {
  if (p.isZero()) return "[\"0\",\"1\",\"0\"]";
  G1Affine a = p.toAffine();
  return "[\"" + toDecimal(a.x.toStd()) + "\",\"" + toDecimal(a.y.toStd()) + "\",\"1\"]";
}

std::string fq2Json(const Fq2& f) {
  return "[\"" + toDecimal(f.c0.toStd()) + "\",\"" + toDecimal(f.c1.toStd()) + "\"]";
}

std::string g2Json(const G2& p) {
  if (p.isZero()) return "[[\"0\",\"0\"],[\"1\",\"0\"],[\"0\",\"0\"]]";
  G2Affine a = p.toAffine();
  return "[" + fq2Json(a.x) + "," + fq2Json(a.y) + ",[\"1\",\"0\"]]";
}

}  // namespace

std::shared_ptr<const ProvingKey> loadZkeyFile(const std::string& path, unsigned threads, bool precompute) {
  FileSource src(path);
  return loadZkey(src, threads, precompute);
}

std::shared_ptr<const ProvingKey> loadZkeyBuffer(const uint8_t* data, size_t len, unsigned threads,
                                                 bool precompute) {
  MemorySource src(data, len);
  return loadZkey(src, threads, precompute);
}

void precomputeTables(const ProvingKey& pk, unsigned threads) {
  std::lock_guard<std::mutex> lk(pk.buildMu);
  std::shared_ptr<const MsmSet> plain = pk.tables();
  if (plain->shifted) return;
  auto set = std::make_shared<MsmSet>();
  set->A = shiftedTable(plain->A, threads);
  set->B1 = shiftedTable(plain->B1, threads);
  set->B2 = shiftedTable(plain->B2, threads);
  set->C = shiftedTable(plain->C, threads);
  set->H = shiftedTable(plain->H, threads);
  set->shifted = true;
  pk.publish(std::move(set));
}

std::vector<U256> parseWitness(const ProvingKey& pk, const uint8_t* data, size_t len) {
  const uint8_t* values = data;
  uint64_t count = 0;
  if (len >= 4 && std::memcmp(data, "wtns", 4) == 0) {
    MemorySource src(data, len);
    std::map<uint32_t, std::vector<Section>> sections;
    try {
      sections = readSections(src, "wtns", witnessFail);
    } catch (const ProverError& e) {
      if (e.code() == "WITNESS_INVALID") throw;
      witnessError("truncated file");
    }
    const Section& h = uniqueSection(sections, 1, witnessFail);
    if (h.size != 4 + 32 + 4) witnessError("unsupported header (field size must be 32 bytes)");
    uint32_t n8 = 0, nWitness = 0;
    std::memcpy(&n8, data + h.offset, 4);
    if (n8 != 32 || !equalsModulus(data + h.offset + 4, FrTag::P)) witnessError("field is not the bn128 scalar field");
    std::memcpy(&nWitness, data + h.offset + 36, 4);
    const Section& d = uniqueSection(sections, 2, witnessFail);
    if (d.size != (uint64_t)nWitness * 32) witnessError("data section size does not match its header");
    values = data + d.offset;
    count = nWitness;
  } else {
    if (len % 32 != 0) witnessError("raw witness length is not a multiple of 32 bytes");
    count = len / 32;
  }
  if (count != pk.nVars) {
    witnessError("length " + std::to_string(count) + " does not match the circuit's " + std::to_string(pk.nVars) +
                 " signals");
  }
  std::vector<U256> w(count);
  std::memcpy(w.data(), values, count * 32);
  for (uint64_t i = 0; i < count; ++i) {
    if (!Fr::isCanonical(w[i].v)) witnessError("element " + std::to_string(i) + " is not reduced modulo r");
  }
  if (!scalarIsOne(w[0])) witnessError("signal 0 must be 1");
  return w;
}

namespace {

// Proofs running now in this process. Concurrent proofs share the pool's cores instead of each
// splitting its work `threads` ways: a proof takes threads / (proofs in flight) when it starts, so a
// lone proof uses every core and a full pool runs one proof per core without splitting overhead.
std::atomic<unsigned> proofsInFlight{0};

struct InFlight {
  unsigned count;
  InFlight() : count(proofsInFlight.fetch_add(1) + 1) {}
  ~InFlight() { proofsInFlight.fetch_sub(1); }
};

}  // namespace

ProofOutput prove(const ProvingKey& pk, const std::vector<U256>& witness, unsigned threads) {
  if (witness.size() != pk.nVars) witnessError("length does not match the circuit");
  InFlight inFlight;
  threads = std::max(1u, std::max(1u, threads) / inFlight.count);
  const size_t n = pk.domainSize;
#ifdef NP_PROFILE
  auto profT0_ = std::chrono::steady_clock::now();
#endif

  // Evaluations of A and B on the domain (Montgomery form), then C = A*B pointwise.
  std::vector<Fr> a(n, Fr::zero()), b(n, Fr::zero()), c(n);
  {
    const auto& coefs = pk.coefs;
    size_t nChunks = std::max<size_t>(1, std::min<size_t>(threads * 4, n / 256));
    size_t per = (n + nChunks - 1) / nChunks;
    ThreadPool::instance().run(nChunks, threads, [&](size_t ch) {
      uint32_t lo = (uint32_t)std::min(n, ch * per), hi = (uint32_t)std::min(n, (ch + 1) * per);
      auto it = std::lower_bound(coefs.begin(), coefs.end(), lo,
                                 [](const Coef& x, uint32_t v) { return x.constraint < v; });
      for (; it != coefs.end() && it->constraint < hi; ++it) {
        Fr wv;
        std::memcpy(wv.v, witness[it->signal].v, 32);
        Fr t = Fr::mul(it->value, wv);
        std::vector<Fr>& out = it->matrix == 0 ? a : b;
        out[it->constraint] = Fr::add(out[it->constraint], t);
      }
      for (uint32_t i = lo; i < hi; ++i) c[i] = Fr::mul(a[i], b[i]);
    });
  }

  NP_MARK("abc");
  // iFFT, shift to the odd coset, FFT: the same steps snarkjs performs before joinABC.
  std::vector<Fr> tmp(n);
  auto toCoset = [&](std::vector<Fr>& v) {
    fft(v.data(), n, pk.roots, threads);  // forward DFT; index-reversed it is n * iDFT
    parallelFor(n, threads, 1 << 12, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) tmp[i] = Fr::mul(v[(n - i) & (n - 1)], pk.cosetKey[i]);
    });
    v.swap(tmp);
    fft(v.data(), n, pk.roots, threads);
  };
  toCoset(a);
  toCoset(b);
  toCoset(c);
  std::vector<U256> h(n);
  parallelFor(n, threads, 1 << 12, [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) h[i] = Fr::sub(Fr::mul(a[i], b[i]), c[i]).toStd();
  });
  NP_MARK("fft");
  std::vector<Fr>().swap(a);
  std::vector<Fr>().swap(b);
  std::vector<Fr>().swap(c);
  std::vector<Fr>().swap(tmp);

  const U256* w = witness.data();
  const std::shared_ptr<const MsmSet> tables = pk.tables();  // one consistent set for the whole proof
  G1 piA = msm(*tables->A, w, pk.nVars, threads);
  NP_MARK("msmA");
  G1 pib1 = msm(*tables->B1, w, pk.nVars, threads);
  NP_MARK("msmB1");
  G2 piB = msm(*tables->B2, w, pk.nVars, threads);
  NP_MARK("msmB2");
  G1 piC = msm(*tables->C, w + pk.nPublic + 1, pk.nVars - pk.nPublic - 1, threads);
  NP_MARK("msmC");
  G1 resH = msm(*tables->H, h.data(), n, threads);

  NP_MARK("msmH");
  Fr r = randomScalar();
  Fr s = randomScalar();
  U256 rStd = r.toStd(), sStd = s.toStd();
  U256 negRs = Fr::neg(Fr::mul(r, s)).toStd();
  G1 delta1 = G1::fromAffine(pk.delta1);

  piA = G1::add(piA, G1::fromAffine(pk.alpha1));
  piA = G1::add(piA, G1::mulScalar(delta1, rStd));
  piB = G2::add(piB, G2::fromAffine(pk.beta2));
  piB = G2::add(piB, G2::mulScalar(G2::fromAffine(pk.delta2), sStd));
  pib1 = G1::add(pib1, G1::fromAffine(pk.beta1));
  pib1 = G1::add(pib1, G1::mulScalar(delta1, sStd));
  piC = G1::add(piC, resH);
  piC = G1::add(piC, G1::mulScalar(piA, sStd));
  piC = G1::add(piC, G1::mulScalar(pib1, rStd));
  piC = G1::add(piC, G1::mulScalar(delta1, negRs));

  NP_MARK("blind");
  ProofOutput out;
  out.proofJson = "{\"pi_a\":" + g1Json(piA) + ",\"pi_b\":" + g2Json(piB) + ",\"pi_c\":" + g1Json(piC) +
                  ",\"protocol\":\"groth16\",\"curve\":\"bn128\"}";
  out.publicJson = "[";
  for (uint32_t i = 1; i <= pk.nPublic; ++i) {
    if (i > 1) out.publicJson += ",";
    out.publicJson += "\"" + toDecimal(witness[i]) + "\"";
  }
  out.publicJson += "]";
  NP_MARK("json");
  return out;
}

}  // namespace np
