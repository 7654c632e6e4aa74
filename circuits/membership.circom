// Membership policy: proves value is one of an allowed set without revealing the value or the set.
// The set is a Poseidon Merkle tree of DEPTH levels (up to 2^DEPTH members): leaf = Poseidon(member),
// empty slots are 0, node = Poseidon(left, right). The public setCommitment is Poseidon(root, setSalt).
// Public signals, in order: result (always 1), valueCommitment, setCommitment, policyId, context.
pragma circom 2.1.0;

include "lib/policy.circom";

template MembershipPolicy(POLICY_ID, VALUE_BITS, DEPTH) {
    signal input value;
    signal input valueSalt;
    signal input pathElements[DEPTH];
    signal input pathIndex;
    signal input setSalt;

    signal input valueCommitment;
    signal input setCommitment;
    signal input policyId;
    signal input context;

    signal output result;

    component id = PolicyId(POLICY_ID);
    id.in <== policyId;
    component bound = Context();
    bound.in <== context;

    component valueBound = Bounded(VALUE_BITS);
    valueBound.in <== value;

    component valueCommit = Commitment();
    valueCommit.value <== value;
    valueCommit.salt <== valueSalt;
    valueCommit.commitment <== valueCommitment;

    // Hashing the leaf keeps members apart from empty slots (0) and from inner nodes.
    component leaf = Poseidon(1);
    leaf.inputs[0] <== value;

    // The index bits say, level by level, whether the running node is the right child.
    component indexBits = Num2Bits(DEPTH);
    indexBits.in <== pathIndex;

    signal node[DEPTH + 1];
    signal left[DEPTH];
    component parent[DEPTH];
    node[0] <== leaf.out;
    for (var i = 0; i < DEPTH; i++) {
        left[i] <== node[i] + indexBits.out[i] * (pathElements[i] - node[i]);
        parent[i] = Poseidon(2);
        parent[i].inputs[0] <== left[i];
        parent[i].inputs[1] <== node[i] + pathElements[i] - left[i];
        node[i + 1] <== parent[i].out;
    }

    component rootCommit = Poseidon(2);
    rootCommit.inputs[0] <== node[DEPTH];
    rootCommit.inputs[1] <== setSalt;
    component matches = IsEqual();
    matches.in[0] <== rootCommit.out;
    matches.in[1] <== setCommitment;
    result <== matches.out;
    // A proof exists only when the policy holds; the signal states it for the verifier.
    result === 1;
}

// Policy id: the ASCII bytes of "px.policy.membership.v1" read as a big-endian integer.
// Depth 10: sets of up to 1024 members.
component main {public [valueCommitment, setCommitment, policyId, context]} =
    MembershipPolicy(10772433987327137605748747606305682687590508994998728241, 64, 10);
