// Range policy: proves low <= value <= high without revealing any of the three.
// Public signals, in order: result (always 1), valueCommitment, lowCommitment, highCommitment, policyId, context.
pragma circom 2.1.0;

include "lib/policy.circom";

template RangePolicy(POLICY_ID, VALUE_BITS) {
    signal input value;
    signal input valueSalt;
    signal input low;
    signal input lowSalt;
    signal input high;
    signal input highSalt;

    signal input valueCommitment;
    signal input lowCommitment;
    signal input highCommitment;
    signal input policyId;
    signal input context;

    signal output result;

    component id = PolicyId(POLICY_ID);
    id.in <== policyId;
    component bound = Context();
    bound.in <== context;

    component valueBound = Bounded(VALUE_BITS);
    valueBound.in <== value;
    component lowBound = Bounded(VALUE_BITS);
    lowBound.in <== low;
    component highBound = Bounded(VALUE_BITS);
    highBound.in <== high;

    component valueCommit = Commitment();
    valueCommit.value <== value;
    valueCommit.salt <== valueSalt;
    valueCommit.commitment <== valueCommitment;
    component lowCommit = Commitment();
    lowCommit.value <== low;
    lowCommit.salt <== lowSalt;
    lowCommit.commitment <== lowCommitment;
    component highCommit = Commitment();
    highCommit.value <== high;
    highCommit.salt <== highSalt;
    highCommit.commitment <== highCommitment;

    component aboveLow = GreaterEqThan(VALUE_BITS);
    aboveLow.in[0] <== value;
    aboveLow.in[1] <== low;
    component belowHigh = LessEqThan(VALUE_BITS);
    belowHigh.in[0] <== value;
    belowHigh.in[1] <== high;
    result <== aboveLow.out * belowHigh.out;
    // A proof exists only when the policy holds; the signal states it for the verifier.
    result === 1;
}

// Policy id: the ASCII bytes of "px.policy.range.v1" read as a big-endian integer.
component main {public [valueCommitment, lowCommitment, highCommitment, policyId, context]} =
    RangePolicy(9797471636672651225807156152959385283229233, 64);
