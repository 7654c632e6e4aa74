// Threshold policy: proves value >= threshold without revealing either.
// Public signals, in order: result (always 1), valueCommitment, thresholdCommitment, policyId, context.
pragma circom 2.1.0;

include "lib/policy.circom";

template ThresholdPolicy(POLICY_ID, VALUE_BITS) {
    signal input value;
    signal input valueSalt;
    signal input threshold;
    signal input thresholdSalt;

    signal input valueCommitment;
    signal input thresholdCommitment;
    signal input policyId;
    signal input context;

    signal output result;

    component id = PolicyId(POLICY_ID);
    id.in <== policyId;
    component bound = Context();
    bound.in <== context;

    component valueBound = Bounded(VALUE_BITS);
    valueBound.in <== value;
    component thresholdBound = Bounded(VALUE_BITS);
    thresholdBound.in <== threshold;

    component valueCommit = Commitment();
    valueCommit.value <== value;
    valueCommit.salt <== valueSalt;
    valueCommit.commitment <== valueCommitment;
    component thresholdCommit = Commitment();
    thresholdCommit.value <== threshold;
    thresholdCommit.salt <== thresholdSalt;
    thresholdCommit.commitment <== thresholdCommitment;

    component ge = GreaterEqThan(VALUE_BITS);
    ge.in[0] <== value;
    ge.in[1] <== threshold;
    result <== ge.out;
    // A proof exists only when the policy holds; the signal states it for the verifier.
    result === 1;
}

// Policy id: the ASCII bytes of "px.policy.threshold.v1" read as a big-endian integer.
component main {public [valueCommitment, thresholdCommitment, policyId, context]} =
    ThresholdPolicy(42079820262996631272456047507177087385293549523072561, 64);
