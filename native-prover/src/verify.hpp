// Groth16 verification of snarkjs proofs on the BN254 pairing, with keys prepared once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pairing.hpp"

namespace np {

// j * 2^(6k) * P for the 43 six-bit windows k and j = 1..32, affine: with signed digits, a public
// input's term of vk_x costs at most 43 mixed additions.
struct FixedBaseTable {
  std::vector<G1Affine> points;  // empty for the point at infinity
};

struct VerifyingKey {
  unsigned nPublic = 0;
  G1Affine ic0;
  std::vector<FixedBaseTable> ic;
  G2Prepared gamma, delta;
  Fq12 alphaBeta;  // Miller loop of (alpha, beta), before the final exponentiation: fixed per key
};

// `numbers`: comma-separated decimals, in order alpha (x, y, z), beta, gamma, delta (x.c0, x.c1, y.c0,
// y.c1, z.c0, z.c1), then x, y, z of each IC point. Throws ProverError VKEY_INVALID on a key that is
// malformed or whose points are off the curve, outside G2's subgroup or at infinity.
std::shared_ptr<const VerifyingKey> prepareVerifyingKey(const std::string& numbers);

// `publicSignals`: comma-separated decimals; `proof`: A (x, y, z), B (six, as for G2 above), C (x, y, z).
// Returns "" when the proof holds, else why not (signal_count_mismatch, signal_out_of_field,
// coordinate_out_of_field, not_affine, point_at_infinity, not_on_curve, not_in_subgroup,
// pairing_mismatch). Throws ProverError VERIFY_INPUT_INVALID when a list is not decimals of the
// right count.
std::string verifyProof(const VerifyingKey& vk, const std::string& publicSignals, const std::string& proof);

// Whether the product of e(P_i, Q_i) is one, for points already checked to be on their curves;
// G2 points must be in the subgroup. Test surface for the pairing itself.
bool pairingProductCheck(const std::vector<G1Affine>& g1, const std::vector<G2Affine>& g2);

}  // namespace np
