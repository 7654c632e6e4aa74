// Groth16 proving key (parsed once from a snarkjs zkey) and the prover entry points.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "curve.hpp"
#include "msm.hpp"

namespace np {

// Error with a stable machine-readable code, surfaced to JS as `err.code`.
class ProverError : public std::runtime_error {
 public:
  ProverError(std::string code, const std::string& msg) : std::runtime_error(msg), code_(std::move(code)) {}
  const std::string& code() const { return code_; }

 private:
  std::string code_;
};

struct Coef {
  uint32_t matrix;      // 0 = A, 1 = B
  uint32_t constraint;  // row in the evaluation domain
  uint32_t signal;      // witness index
  Fr value;             // snarkjs stores value * R^2, so one Montgomery product with a plain witness yields Mont(value * w)
};

// The bases of the five MSMs: as read from the zkey, or with shifted copies (see MsmTable).
struct MsmSet {
  std::shared_ptr<const MsmTable<Fq>> A, B1, C, H;
  std::shared_ptr<const MsmTable<Fq2>> B2;
  bool shifted = false;
  size_t bytes() const { return A->bytes() + B1->bytes() + C->bytes() + H->bytes() + B2->bytes(); }
};

struct ProvingKey {
  uint32_t nVars = 0;
  uint32_t nPublic = 0;
  uint32_t domainSize = 0;
  unsigned power = 0;
  G1Affine alpha1, beta1, delta1;
  G2Affine beta2, gamma2, delta2;
  std::vector<Coef> coefs;  // sorted by constraint
  std::vector<Fr> roots;     // w^i for i < domainSize/2
  std::vector<Fr> cosetKey;  // inc^i / domainSize: folds the iFFT scaling into the coset shift

  // Starts as the plain set; precomputeTables swaps in the shifted one while proofs may be running.
  std::shared_ptr<const MsmSet> tables() const { return std::atomic_load(&tables_); }
  void publish(std::shared_ptr<const MsmSet> t) const { std::atomic_store(&tables_, std::move(t)); }
  mutable std::mutex buildMu;

 private:
  mutable std::shared_ptr<const MsmSet> tables_;
};

struct ProofOutput {
  std::string proofJson;
  std::string publicJson;
};

// Parses and validates a zkey from a file path or an in-memory copy; with `precompute` the shifted
// tables are built before returning (slower load, faster proofs), else the plain ones serve until
// precomputeTables runs.
std::shared_ptr<const ProvingKey> loadZkeyFile(const std::string& path, unsigned threads, bool precompute);
std::shared_ptr<const ProvingKey> loadZkeyBuffer(const uint8_t* data, size_t len, unsigned threads,
                                                 bool precompute);

// Builds the shifted tables and publishes them; returns at once when they are built already.
void precomputeTables(const ProvingKey& pk, unsigned threads);

// Accepts a .wtns file image or a raw array of nVars little-endian 32-byte field elements.
std::vector<U256> parseWitness(const ProvingKey& pk, const uint8_t* data, size_t len);

ProofOutput prove(const ProvingKey& pk, const std::vector<U256>& witness, unsigned threads);

}  // namespace np
