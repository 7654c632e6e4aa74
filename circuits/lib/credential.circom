// The credential check shared by the query circuits: an issuer's EdDSA-Poseidon signature over a
// claim, its validity at a public time, its revocation nonce absent from the issuer's revocation tree,
// and predicates over its fields. The claim, its encoding and the signature are specified in
// docs/credentials.md.
pragma circom 2.1.0;

include "circomlib/circuits/eddsaposeidon.circom";
include "circomlib/circuits/smt/smtverifier.circom";
include "policy.circom";

// One predicate over the claim's fields. op: 0 none (holds), 1 eq, 2 ne, 3 lt, 4 lte, 5 gt, 6 gte,
// 7 between (inclusive), 8 in, 9 nin; field: the index of the field (0..NFIELDS-1). The parameters are
// private, committed as Poseidon(p0, ..., p(K-1), salt): lt..gte compare with p0, between is
// [p0, p1], in and nin take the set {p0, ..., p(K-1)} (pad by repeating a member). Ordered operators
// need the field and their parameters below 2^VALUE_BITS; eq, ne, in and nin compare field elements.
template Predicate(NFIELDS, K, VALUE_BITS) {
    signal input values[NFIELDS];
    signal input field;
    signal input op;
    signal input params[K];
    signal input salt;
    signal input commitment;
    signal output holds;

    // The field's value: exactly one index matches.
    component isField[NFIELDS];
    signal picked[NFIELDS];
    var fieldCount = 0;
    var x = 0;
    for (var j = 0; j < NFIELDS; j++) {
        isField[j] = IsEqual();
        isField[j].in[0] <== field;
        isField[j].in[1] <== j;
        picked[j] <== isField[j].out * values[j];
        fieldCount += isField[j].out;
        x += picked[j];
    }
    fieldCount === 1;

    component isOp[10];
    var opCount = 0;
    for (var k = 0; k < 10; k++) {
        isOp[k] = IsEqual();
        isOp[k].in[0] <== op;
        isOp[k].in[1] <== k;
        opCount += isOp[k].out;
    }
    opCount === 1;

    // Ordered comparisons, on values that are zeroed unless the operator orders: a string field's
    // 248-bit hash can still be compared for equality.
    signal ordered;
    ordered <== isOp[3].out + isOp[4].out + isOp[5].out + isOp[6].out + isOp[7].out;
    signal xo;
    signal p0o;
    signal p1o;
    xo <== x * ordered;
    p0o <== params[0] * ordered;
    p1o <== params[1] * ordered;
    component xBound = Bounded(VALUE_BITS);
    xBound.in <== xo;
    component p0Bound = Bounded(VALUE_BITS);
    p0Bound.in <== p0o;
    component p1Bound = Bounded(VALUE_BITS);
    p1Bound.in <== p1o;
    component below = LessThan(VALUE_BITS);
    below.in[0] <== xo;
    below.in[1] <== p0o;
    component above = LessThan(VALUE_BITS);
    above.in[0] <== p0o;
    above.in[1] <== xo;
    component aboveHigh = LessThan(VALUE_BITS);
    aboveHigh.in[0] <== p1o;
    aboveHigh.in[1] <== xo;

    component equal = IsEqual();
    equal.in[0] <== x;
    equal.in[1] <== params[0];
    signal product[K];
    product[0] <== x - params[0];
    for (var k = 1; k < K; k++) product[k] <== product[k - 1] * (x - params[k]);
    component member = IsZero();
    member.in <== product[K - 1];

    signal between;
    between <== (1 - below.out) * (1 - aboveHigh.out);

    signal chosen[10];
    chosen[0] <== isOp[0].out;
    chosen[1] <== isOp[1].out * equal.out;
    chosen[2] <== isOp[2].out * (1 - equal.out);
    chosen[3] <== isOp[3].out * below.out;
    chosen[4] <== isOp[4].out * (1 - above.out);
    chosen[5] <== isOp[5].out * above.out;
    chosen[6] <== isOp[6].out * (1 - below.out);
    chosen[7] <== isOp[7].out * between;
    chosen[8] <== isOp[8].out * member.out;
    chosen[9] <== isOp[9].out * (1 - member.out);
    var sum = 0;
    for (var k = 0; k < 10; k++) sum += chosen[k];
    holds <== sum;

    component hash = Poseidon(K + 1);
    for (var k = 0; k < K; k++) hash.inputs[k] <== params[k];
    hash.inputs[K] <== salt;
    commitment === hash.out;
}

// One credential, checked: signed by the issuer key, of the schema, valid at `now`, unrevoked under
// `revocationRoot`, with `holds` 1 when every predicate holds. The subject (claim[1]) is an output: a query proof makes
// it public, a credentialed approval ties it to the approver's identity without revealing it.
template CredentialCheck(NFIELDS, NPRED, K, DEPTH, VALUE_BITS) {
    // The claim: schema id, subject, valid from, valid until, revocation nonce, then the fields.
    signal input claim[5 + NFIELDS];
    signal input sigR8x;
    signal input sigR8y;
    signal input sigS;
    signal input revocationSiblings[DEPTH];
    signal input revocationOldKey;
    signal input revocationOldValue;
    signal input revocationIsOld0;
    signal input params[NPRED][K];
    signal input salts[NPRED];

    signal input issuerAx;
    signal input issuerAy;
    signal input schemaId;
    signal input now;
    signal input revocationRoot;
    signal input fields[NPRED];
    signal input ops[NPRED];
    signal input parameterCommitments[NPRED];

    signal output subject;
    // 1 when every predicate holds (the caller pins it).
    signal output holds;

    // The issuer signed the Poseidon hash of the claim.
    component claimHash = Poseidon(5 + NFIELDS);
    for (var i = 0; i < 5 + NFIELDS; i++) claimHash.inputs[i] <== claim[i];
    component signature = EdDSAPoseidonVerifier();
    signature.enabled <== 1;
    signature.Ax <== issuerAx;
    signature.Ay <== issuerAy;
    signature.S <== sigS;
    signature.R8x <== sigR8x;
    signature.R8y <== sigR8y;
    signature.M <== claimHash.out;

    schemaId === claim[0];
    subject <== claim[1];

    // Valid at the public time: validFrom <= now < validUntil.
    component nowBound = Bounded(VALUE_BITS);
    nowBound.in <== now;
    component fromBound = Bounded(VALUE_BITS);
    fromBound.in <== claim[2];
    component untilBound = Bounded(VALUE_BITS);
    untilBound.in <== claim[3];
    component started = LessEqThan(VALUE_BITS);
    started.in[0] <== claim[2];
    started.in[1] <== now;
    started.out === 1;
    component unexpired = LessThan(VALUE_BITS);
    unexpired.in[0] <== now;
    unexpired.in[1] <== claim[3];
    unexpired.out === 1;

    // Not revoked: the nonce is not a key of the issuer's revocation tree with this root.
    component revocation = SMTVerifier(DEPTH);
    revocation.enabled <== 1;
    revocation.fnc <== 1;
    revocation.root <== revocationRoot;
    for (var i = 0; i < DEPTH; i++) revocation.siblings[i] <== revocationSiblings[i];
    revocation.oldKey <== revocationOldKey;
    revocation.oldValue <== revocationOldValue;
    revocation.isOld0 <== revocationIsOld0;
    revocation.key <== claim[4];
    revocation.value <== 0;

    component predicate[NPRED];
    var holding = 0;
    for (var p = 0; p < NPRED; p++) {
        predicate[p] = Predicate(NFIELDS, K, VALUE_BITS);
        for (var j = 0; j < NFIELDS; j++) predicate[p].values[j] <== claim[5 + j];
        predicate[p].field <== fields[p];
        predicate[p].op <== ops[p];
        for (var k = 0; k < K; k++) predicate[p].params[k] <== params[p][k];
        predicate[p].salt <== salts[p];
        predicate[p].commitment <== parameterCommitments[p];
        holding += predicate[p].holds;
    }
    component all = IsEqual();
    all.in[0] <== holding;
    all.in[1] <== NPRED;
    holds <== all.out;
}
