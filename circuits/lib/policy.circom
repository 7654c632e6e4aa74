// Building blocks shared by the blind-policy circuits: value bounds, salted commitments, policy ids,
// and the context a proof is bound to.
pragma circom 2.1.0;

include "circomlib/circuits/bitify.circom";
include "circomlib/circuits/comparators.circom";
include "circomlib/circuits/poseidon.circom";

// Every compared value must fit in VALUE_BITS bits: circomlib's comparators are only sound for
// inputs below 2^n, and without the bound a field element such as p - 1 could wrap a subtraction
// and satisfy a comparison it should fail.
template Bounded(BITS) {
    signal input in;
    component bits = Num2Bits(BITS);
    bits.in <== in;
}

// The public commitment must be Poseidon(value, salt): it binds the proof to an input the verifier
// never sees, and the salt stops anyone from confirming a guess of a small value.
template Commitment() {
    signal input value;
    signal input salt;
    signal input commitment;
    component hash = Poseidon(2);
    hash.inputs[0] <== value;
    hash.inputs[1] <== salt;
    commitment === hash.out;
}

// Pins the public policy-id signal to this circuit's constant, so a proof says which policy it is for.
template PolicyId(ID) {
    signal input in;
    in === ID;
}

// The public context says where a proof may be used (for a workflow stage: Poseidon(proof id field,
// stage index)); the verifier checks it against the place it is presented. Squaring it puts the
// signal in a constraint of its own, so no compiler pass or setup leaves it out of the statement.
template Context() {
    signal input in;
    signal square;
    square <== in * in;
}
