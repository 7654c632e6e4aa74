// Credentialed approval: proves the sender holds the secret of one identity in a stage's approver set
// (the ballot circuit's membership, nullifier and message binding) and that this same identity holds a
// credential from an issuer, valid and unrevoked at a public time, whose fields meet a query: "an
// underwriter approved", with neither the approver nor the credential's fields revealed.
//   identity commitment = Poseidon(identitySecret)          (a leaf of the set's tree, and the
//                                                             credential's subject)
//   tree: DEPTH levels, empty leaves 0, node = Poseidon(left, right)
//   nullifier = Poseidon(identitySecret, scope)              (one per approver and stage)
// The credential's claim, encoding and signature are those of docs/credentials.md.
// Public signals, in order: root, nullifier, scope, message, issuerAx, issuerAy, schemaId, now,
// revocationRoot, fields[2], ops[2], parameterCommitments[2].
pragma circom 2.1.0;

include "lib/credential.circom";

template CredentialedApproval(DEPTH, NFIELDS, NPRED, K, RDEPTH, VALUE_BITS) {
    signal input identitySecret;
    signal input pathElements[DEPTH];
    signal input pathIndex;

    signal input claim[5 + NFIELDS];
    signal input sigR8x;
    signal input sigR8y;
    signal input sigS;
    signal input revocationSiblings[RDEPTH];
    signal input revocationOldKey;
    signal input revocationOldValue;
    signal input revocationIsOld0;
    signal input params[NPRED][K];
    signal input salts[NPRED];

    // The workflow stage, and the content the approval approves, as field elements.
    signal input scope;
    signal input message;
    signal input issuerAx;
    signal input issuerAy;
    signal input schemaId;
    signal input now;
    signal input revocationRoot;
    signal input fields[NPRED];
    signal input ops[NPRED];
    signal input parameterCommitments[NPRED];

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

    // The credential, about this identity.
    component credential = CredentialCheck(NFIELDS, NPRED, K, RDEPTH, VALUE_BITS);
    for (var i = 0; i < 5 + NFIELDS; i++) credential.claim[i] <== claim[i];
    credential.sigR8x <== sigR8x;
    credential.sigR8y <== sigR8y;
    credential.sigS <== sigS;
    for (var i = 0; i < RDEPTH; i++) credential.revocationSiblings[i] <== revocationSiblings[i];
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
    credential.subject === commitment.out;
    credential.holds === 1;

    // Public inputs that no other constraint reads stay bound whatever the toolchain (as the ballot's).
    signal scopeSquare <== scope * scope;
    signal messageSquare <== message * message;
}

// Sets of up to 1024 approvers (the ballot's depth); two predicates over a credential of up to eight
// fields; the revocation tree of docs/credentials.md (depth 20).
component main {public [scope, message, issuerAx, issuerAy, schemaId, now, revocationRoot, fields, ops, parameterCommitments]} =
    CredentialedApproval(10, 8, 2, 4, 20, 64);
