// Anonymous ballot: proves the sender holds the secret of one identity in a room's member tree,
// derives the proposal's nullifier from that secret, and binds the encrypted vote, without saying
// which identity it is. Semaphore's construction, on circomlib alone:
//   identity commitment = Poseidon(identitySecret)          (a leaf of the room's tree)
//   tree: DEPTH levels, empty leaves 0, node = Poseidon(left, right)
//   nullifier = Poseidon(identitySecret, scope)              (one per member and proposal)
// Public signals, in order: root, nullifier, voteHash, scope.
pragma circom 2.1.0;

include "circomlib/circuits/bitify.circom";
include "circomlib/circuits/poseidon.circom";

template Ballot(DEPTH) {
    signal input identitySecret;
    signal input pathElements[DEPTH];
    signal input pathIndex;

    // The proposal, as a field element the service derives from its id.
    signal input scope;
    // A hash of the vote's ciphertext: a proof is for one ciphertext, so the vote cannot be swapped.
    signal input voteHash;

    signal output root;
    signal output nullifier;

    component commitment = Poseidon(1);
    commitment.inputs[0] <== identitySecret;

    // The index bits say, level by level, whether the running node is the right child.
    component indexBits = Num2Bits(DEPTH);
    indexBits.in <== pathIndex;

    signal node[DEPTH + 1];
    signal left[DEPTH];
    component parent[DEPTH];
    node[0] <== commitment.out;
    for (var i = 0; i < DEPTH; i++) {
        left[i] <== node[i] + indexBits.out[i] * (pathElements[i] - node[i]);
        parent[i] = Poseidon(2);
        parent[i].inputs[0] <== left[i];
        parent[i].inputs[1] <== node[i] + pathElements[i] - left[i];
        node[i + 1] <== parent[i].out;
    }
    root <== node[DEPTH];

    component nullifierHash = Poseidon(2);
    nullifierHash.inputs[0] <== identitySecret;
    nullifierHash.inputs[1] <== scope;
    nullifier <== nullifierHash.out;

    // Public inputs that no other constraint reads could be changed under a valid proof by a
    // prover toolchain that does not add its own; a quadratic constraint on each keeps them bound
    // whatever the toolchain (and survives --O2, which folds only linear constraints).
    signal scopeSquare <== scope * scope;
    signal voteSquare <== voteHash * voteHash;
}

// Depth 10: rooms of up to 1024 identities, in the 2^12 development powers of tau.
component main {public [voteHash, scope]} = Ballot(10);
