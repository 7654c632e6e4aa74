// Groth16 proving key (parsed once from a snarkjs zkey) and the prover entry points.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "curve.hpp"

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

struct ProvingKey {
  uint32_t nVars = 0;
  uint32_t nPublic = 0;
  uint32_t domainSize = 0;
  unsigned power = 0;
  G1Affine alpha1, beta1, delta1;
  G2Affine beta2, gamma2, delta2;
  std::vector<Coef> coefs;  // sorted by constraint
  std::vector<G1Affine> pointsA, pointsB1, pointsC, pointsH;
  std::vector<G2Affine> pointsB2;
  std::vector<Fr> roots;     // w^i for i < domainSize/2
  std::vector<Fr> cosetKey;  // inc^i / domainSize: folds the iFFT scaling into the coset shift
};

struct ProofOutput {
  std::string proofJson;
  std::string publicJson;
};

// Parses and validates a zkey from a file path or an in-memory copy.
std::shared_ptr<const ProvingKey> loadZkeyFile(const std::string& path, unsigned threads);
std::shared_ptr<const ProvingKey> loadZkeyBuffer(const uint8_t* data, size_t len, unsigned threads);

// Accepts a .wtns file image or a raw array of nVars little-endian 32-byte field elements.
std::vector<U256> parseWitness(const ProvingKey& pk, const uint8_t* data, size_t len);

ProofOutput prove(const ProvingKey& pk, const std::vector<U256>& witness, unsigned threads);

}  // namespace np
