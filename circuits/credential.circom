// Credential query: proves, for one issuer-signed credential and without revealing any of its fields,
// that the issuer signed it, that up to four predicates hold over its fields at once, that it is valid
// at a public time, that its revocation nonce is not in the issuer's revocation tree under a public
// root, that it is about a public subject commitment, and where the proof may be used (the context).
// The claim, its encoding and the signature are specified in docs/credentials.md.
// Public signals, in order: result (always 1), policyId, issuerAx, issuerAy, schemaId, subject, now,
// revocationRoot, fields[4], ops[4], parameterCommitments[4], context.
pragma circom 2.1.0;

include "lib/credential.circom";

template CredentialQuery(POLICY_ID, NFIELDS, NPRED, K, DEPTH, VALUE_BITS) {
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

    signal input policyId;
    signal input issuerAx;
    signal input issuerAy;
    signal input schemaId;
    signal input subject;
    signal input now;
    signal input revocationRoot;
    signal input fields[NPRED];
    signal input ops[NPRED];
    signal input parameterCommitments[NPRED];
    signal input context;

    signal output result;

    component id = PolicyId(POLICY_ID);
    id.in <== policyId;
    component bound = Context();
    bound.in <== context;

    component credential = CredentialCheck(NFIELDS, NPRED, K, DEPTH, VALUE_BITS);
    for (var i = 0; i < 5 + NFIELDS; i++) credential.claim[i] <== claim[i];
    credential.sigR8x <== sigR8x;
    credential.sigR8y <== sigR8y;
    credential.sigS <== sigS;
    for (var i = 0; i < DEPTH; i++) credential.revocationSiblings[i] <== revocationSiblings[i];
    credential.revocationOldKey <== revocationOldKey;
    credential.revocationOldValue <== revocationOldValue;
    credential.revocationIsOld0 <== revocationIsOld0;
    for (var p = 0; p < NPRED; p++) {
        for (var k = 0; k < K; k++) credential.params[p][k] <== params[p][k];
        credential.salts[p] <== salts[p];
        credential.fields[p] <== fields[p];
        credential.ops[p] <== ops[p];
        credential.parameterCommitments[p] <== parameterCommitments[p];
    }
    credential.issuerAx <== issuerAx;
    credential.issuerAy <== issuerAy;
    credential.schemaId <== schemaId;
    credential.now <== now;
    credential.revocationRoot <== revocationRoot;
    subject === credential.subject;

    // 1 when every predicate holds; a proof exists only then.
    result <== credential.holds;
    result === 1;
}

// Policy id: the ASCII bytes of "px.policy.credential.v1" read as a big-endian integer.
component main {public [policyId, issuerAx, issuerAy, schemaId, subject, now, revocationRoot, fields, ops, parameterCommitments, context]} =
    CredentialQuery(10772433987327137605748746818037700710512719822783936049, 8, 4, 4, 20, 64);
