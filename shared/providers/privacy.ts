// What is public and what is private, per feature, and where it executes; and the index of privacy
// claims, each naming how it is enforced and the test that checks it (a test keeps the two in step).

export const executionPlaces = ['client', 'service', 'chain', 'zk-proof', 'provider'] as const;
export type ExecutionPlace = (typeof executionPlaces)[number];

export interface MatrixRow {
  feature: string;
  public: string[];
  private: string[];
  executes: ExecutionPlace[];
  notes: string;
}

export const privacyExecutionMatrix: readonly MatrixRow[] = [
  {
    feature: 'agent-jobs',
    public: [
      'service id',
      'job status and progress',
      'price quote',
      'result of public services',
      'receipt by id',
    ],
    private: [
      'agent API key (only its hash is stored)',
      'inputs of private services (sealed between web and prover)',
    ],
    executes: ['service'],
    notes: 'The web process validates and stores; workers run the job; results are read back from Postgres.',
  },
  {
    feature: 'payments',
    public: [
      'asset, amount, treasury address, quote reference',
      'transaction id and confirmations',
      'signed receipt',
    ],
    private: ['Monero transaction key (used to verify, never returned)'],
    executes: ['chain', 'service'],
    notes:
      'Transfers happen on chain; the worker verifies them through the chain adapter; one transfer pays once.',
  },
  {
    feature: 'proof-workflows',
    public: [
      'existed',
      'completed',
      'required approvals happened',
      'sequence respected',
      'stage hashes and chain head',
      'signature',
      'approver sets (identity commitments, every root logged) and approval proofs (root, nullifier, proof)',
    ],
    private: [
      'which member of an approver set made an approval (proved in zero knowledge on the approver’s machine)',
      'documents',
      'thresholds (a policy stage keeps only the commitments to its parameters)',
      'calculations',
      'reviewer notes',
      'methodology',
      'actor identities (commitments only)',
      'evidence hashes (stored only as salted commitments)',
    ],
    executes: ['client', 'service', 'zk-proof'],
    notes:
      'Clients send hashes, commitments and policy proofs only; a policy stage checks its proof (policy, parameter commitments, context, validity, single use); the service chains and signs; anyone verifies offline.',
  },
  {
    feature: 'blind-policy',
    public: [
      'policy id',
      'Poseidon commitments',
      'context (where the proof may be used)',
      'result',
      'Groth16 proof',
    ],
    private: [
      'policy inputs',
      'salts (in the prove answer only; with an Idempotency-Key that answer is kept sealed under a key derived from it)',
    ],
    executes: ['zk-proof', 'service'],
    notes:
      'The prover process computes the witness and proof; verification needs only the verification key, and says when the keys come from the insecure development setup.',
  },
  {
    feature: 'governance',
    public: [
      'proposal status',
      'time remaining',
      'the proposal ballot key (public half) and the room’s identity commitments and tree roots',
      'a room’s trustees, their public keys and every signed message of their key ceremony',
      'after the close: every ballot (nullifier, ciphertext, proof, vote) in nullifier order, the tally and proof package; under the service’s key the ballot key, under the trustees’ key each ballot’s partial decryptions with their proofs',
    ],
    private: [
      'during voting: ratios, addresses, intent, momentum, option tallies, even the ballot count',
      'which member cast which ballot, from everyone including the operator with the database and logs',
      'identity secrets (they never leave the voter’s machine)',
      'when each ballot was cast (no time stored or published)',
      'in a room with trustees: every vote until the threshold of trustees decrypts after the close, from the operator too (the service holds no share)',
      'trustees’ secrets and shares (they never leave the trustees’ machines)',
    ],
    executes: ['client', 'zk-proof', 'service'],
    notes:
      'Voters prove tree membership (Groth16) and encrypt their vote on their own machine; the service verifies, keeps a nullifier, a root, the ciphertext and the proof. In a room with trustees the vote is encrypted to the joint key of their distributed key generation and opened only by any threshold of them after the close: the operator cannot read it early, with every table, log and key it holds. In a room without trustees the proposal key is the service’s own, opened at the close: the operator could read votes early, never attribute them.',
  },
  {
    feature: 'treasury',
    public: ['request status', 'approvals count against m-of-n', 'audit trail hashes'],
    private: ['approver identities (commitments)', 'internal justification'],
    executes: ['service', 'chain'],
    notes: 'Requests and approvals are recorded; execution is a recorded request, audited as a hash chain.',
  },
  {
    feature: 'auctions',
    public: [
      'auction status and windows',
      'after reveal: the winner, every commitment and revealed amount, proof package',
    ],
    private: [
      'bid amounts, leaders and bidder intent until reveal (bids are sha256 commitments)',
      'losing bidders’ wallets, deposit references and salts, also after reveal',
    ],
    executes: ['client', 'service'],
    notes:
      'Bidders commit sha256(amount ‖ sha256(salt ‖ bidder)); the service only sees amounts at reveal, and the package names the winner only.',
  },
  {
    feature: 'checkout',
    public: ['license tiers, prices and accepted assets (the catalogue)'],
    private: [
      'buyer email (stored, never logged, never on a public reply)',
      'the checkout, its amount, address and payment state (to the holder of its client secret only)',
      'client secret (shown once; stored as a sha256)',
      'license key (shown to the client-secret holder; stored as a sha256 and sealed to a key only the client secret derives)',
    ],
    executes: ['chain', 'service'],
    notes:
      'The checkout id is a name, not a key: its client secret opens it. The worker verifies the transfer and issues an ed25519-signed license that verifies offline, sealing its key to the buyer.',
  },
  {
    feature: 'private-payments-login',
    public: ['challenge text (title with a random nonce, timestamp, wallet address)'],
    private: [
      'wallet signature (sent to the provider, which forwards it to this service’s redeem route: verified there, neither stored nor logged)',
      'access token (passed through, never logged or stored)',
      'private balances',
    ],
    executes: ['client', 'provider', 'service'],
    notes:
      'The client signs the challenge and logs in at the provider; the provider, authenticated by a shared secret, redeems it at this service once; balance queries are proxied with the caller’s token.',
  },
];

export interface PrivacyClaim {
  id: string;
  claim: string;
  enforcement: string;
  test: { file: string; name: string };
}

export const privacyClaims: readonly PrivacyClaim[] = [
  {
    id: 'workflow-no-private-data',
    claim: 'Proof workflows never store or reveal documents or plain evidence: only hashes and commitments.',
    enforcement: 'Routes accept hashes and commitments only; the store and pages render public facts only.',
    test: {
      file: 'test/workflows/e2e/privacy.test.ts',
      name: 'leaves no private string or plain evidence hash anywhere',
    },
  },
  {
    id: 'workflow-evidence-hash-committed',
    claim:
      'The plain evidence hash of a stage’s policy proof is in no table or reply: only its salted commitment is recorded.',
    enforcement:
      'The event transaction commits the proof’s hash with a fresh salt; single use is keyed on the proof’s statement, not on that hash.',
    test: {
      file: 'test/workflows/e2e/policy-gate.test.ts',
      name: 'accepts the right proof once; the same statement again, even re-randomized, is refused',
    },
  },
  {
    id: 'workflow-policy-proof-bound',
    claim:
      'A stage that needs a blind policy proof accepts only a proof of its policy, committing to the parameters fixed at prepare, made for that stage of that workflow, that verifies.',
    enforcement:
      'The event gate compares the proof’s policy, parameter commitments and context (Poseidon of the proof id and stage index) with the stage’s before the Groth16 check; any difference is a 409 and nothing is written.',
    test: {
      file: 'test/workflows/e2e/policy-gate.test.ts',
      name: 'refuses a threshold-0 or weaker proof, another workflow’s, the wrong policy’s, an unbound and a forged one',
    },
  },
  {
    id: 'workflow-policy-proof-single-use',
    claim:
      'A policy proof counts as evidence once; the same statement again, even as a re-randomized proof, is refused.',
    enforcement:
      'A unique row per statement hash (policy and public signals) in policy_proof_uses, taken in the event transaction.',
    test: {
      file: 'test/workflows/e2e/policy-gate.test.ts',
      name: 'accepts the right proof once; the same statement again, even re-randomized, is refused',
    },
  },
  {
    id: 'workflow-policy-parameters-private',
    claim:
      'Plain policy parameters given at prepare (a threshold, a range, a set) are committed and dropped: only the commitments are stored; the salts are returned once.',
    enforcement:
      'prepare commits with Poseidon and fresh salts before the insert; rows hold commitments only.',
    test: {
      file: 'test/workflows/e2e/policy-gate.test.ts',
      name: 'commits plain parameters, keeps only the commitments and returns the salts once',
    },
  },
  {
    id: 'blind-policy-inputs',
    claim:
      'Blind policy inputs never appear in a response (but the caller’s own prove answer), log line or table; salts appear in the prove answer only.',
    enforcement:
      'Inputs are sealed (AES-256-GCM) to the prover and wiped after proving; public signals are commitments.',
    test: {
      file: 'test/zk/prove.test.ts',
      name: 'leaves no private input in any response, log line or table; salts only in the prove answer',
    },
  },
  {
    id: 'blind-policy-idempotent-reply-sealed',
    claim:
      'With an Idempotency-Key, the prove answer (salts included) is kept only sealed under a key derived from that Idempotency-Key, which is stored as a hash: no table holds the salts in clear.',
    enforcement:
      'The idempotency layer seals stored replies with AES-256-GCM under HKDF(Idempotency-Key); the logger redacts the header.',
    test: {
      file: 'test/zk/prove.test.ts',
      name: 'keeps an idempotent prove answer sealed under the caller’s key: its salts are in no table in clear',
    },
  },
  {
    id: 'no-insecure-setup-in-production',
    claim:
      'In production, web and prover refuse to start with the committed development circuit setup (or any powers of tau whose blake2b-512 hash is neither a published ceremony file’s nor pinned in PTAU_PINNED_HASHES) unless ALLOW_INSECURE_CIRCUITS=true, which then shows in readiness and status.',
    enforcement:
      'assertCircuitSetup runs before either process opens a connection; the setup is insecure unless the manifest’s ptau hash is in circuits/ceremony/ptau-hashes.json or PTAU_PINNED_HASHES (never by file name); the refusal ends the process with status 1 and one line.',
    test: {
      file: 'test/zk/setup.test.ts',
      name: '%s exits non-zero with one line naming the insecure setup and how to build real artifacts',
    },
  },
  {
    id: 'ptau-by-hash-not-name',
    claim:
      'A powers-of-tau file named like a published ceremony file but with another hash is refused in production, with one line saying how to use a published file or pin the hash.',
    enforcement:
      'circuitSetup derives insecure from the blake2b-512 hash the build recorded in the manifest, checked against the published list and PTAU_PINNED_HASHES; circuits:check checks the recorded hash against the file.',
    test: {
      file: 'test/zk/setup-provenance.test.ts',
      name: 'refuses a ptau whose name claims a ceremony but whose hash is unknown, in one line saying what to do',
    },
  },
  {
    id: 'artifacts-by-hash',
    claim: 'A circuit artifact that differs from the manifest’s sha256 (one byte is enough) refuses to load.',
    enforcement:
      'Every wasm, zkey and verification key is hashed at start of web and prover, and by readiness.',
    test: {
      file: 'test/zk/setup.test.ts',
      name: '%s refuses to load a zkey altered by one byte',
    },
  },
  {
    id: 'runtime-proof-digest-observed',
    claim:
      'The local AI runtime proof says whether the model digest was reported by the runtime (and matches) or is only configured.',
    enforcement:
      'The statement carries digest.observed from the runtime’s API (Ollama /api/tags) beside the configured one, and a status.',
    test: {
      file: 'test/providers/status.test.ts',
      name: 'says whether the model digest was observed from the runtime or only configured',
    },
  },
  {
    id: 'one-transfer-pays-once',
    claim:
      'One on-chain transfer pays for one purchase only, across jobs, checkouts and payment-gate requests.',
    enforcement: 'Unique (chain, tx_ref, output) in payment_claims, taken in the settling transaction.',
    test: {
      file: 'test/licensing/checkout.test.ts',
      name: 'refuses a transfer already credited to another checkout',
    },
  },
  {
    id: 'checkout-email-private',
    claim:
      'A buyer’s email is stored for the license record but never logged and never shown on a public reply.',
    enforcement: 'Checkout views omit it; log lines carry ids only.',
    test: {
      file: 'test/licensing/checkout.test.ts',
      name: 'never shows the email on a public reply or in a log line',
    },
  },
  {
    id: 'license-offline',
    claim:
      'A license is checkable offline with the published service key, and a forged or altered one is refused.',
    enforcement: 'ed25519 signature over the canonical payload; verifyLicense is a pure function.',
    test: {
      file: 'test/licensing/checkout.test.ts',
      name: 'runs a paid checkout end to end on a real chain',
    },
  },
  {
    id: 'checkout-opens-with-secret',
    claim:
      'A checkout or payment-gate request opens only with its client secret: knowing its id reads, pays or changes nothing.',
    enforcement:
      'The sha256 of the Bearer cs_…/gs_… is compared in constant time before any read or write; otherwise the same 404 as for no such id.',
    test: {
      file: 'test/security/checkout-access.test.ts',
      name: 'opens only with its client secret: the attacker who knows the ids reads and pays nothing',
    },
  },
  {
    id: 'license-keys-hashed',
    claim:
      'No license key or client secret is stored: a database dump holds their sha256 (and the key sealed to its buyer), and no license row authenticates.',
    enforcement:
      'licenses.token_hash with the licenseId of the signed token as the lookup; fresh randomness in every key; the key sealed with X25519 to a key derived from the client secret.',
    test: {
      file: 'test/security/checkout-access.test.ts',
      name: 'leaves no license key and no client secret in a database dump',
    },
  },
  {
    id: 'license-issued-once',
    claim: 'A paid checkout issues exactly one license, however often or concurrently it is verified.',
    enforcement: 'Conditional updates on the checkout state and a unique license per checkout.',
    test: {
      file: 'test/licensing/checkout.test.ts',
      name: 'issues one license however many times verify is called at once',
    },
  },
  {
    id: 'handoff-token-not-logged',
    claim: 'The private-payments access token is passed through to the provider and never logged or stored.',
    enforcement:
      'The proxy forwards the Authorization header only; the logger redacts authorization headers.',
    test: {
      file: 'test/providers/handoff.test.ts',
      name: 'logs a real wallet in at the stand-in and reads demo balances through the proxy',
    },
  },
  {
    id: 'handoff-challenge-single-use',
    claim: 'A private-payments login challenge logs in once, before it expires, and only as issued.',
    enforcement:
      'The service records the hash of each issued text (a random nonce in its title); the provider redeems it through one conditional update.',
    test: {
      file: 'test/providers/handoff.test.ts',
      name: 'refuses a replayed challenge: it logs in once',
    },
  },
  {
    id: 'handoff-challenge-expires',
    claim:
      'A private-payments login challenge past its TTL cannot be redeemed, whatever the provider’s clock says.',
    enforcement: 'The redeeming update requires expires_at > now at the service.',
    test: {
      file: 'test/providers/handoff.test.ts',
      name: 'refuses an expired challenge, at the stand-in and at the service',
    },
  },
  {
    id: 'handoff-challenge-provider-only',
    claim:
      'Only the provider authenticated to this service can redeem a login challenge: holding the wallet-signed text is not enough.',
    enforcement:
      'The redeem route requires an HMAC-SHA256 under PAYMENTS_PROVIDER_SECRET over a fresh timestamp and the redemption, checked before the challenge is looked at.',
    test: {
      file: 'test/providers/handoff.test.ts',
      name: 'refuses a redemption without the provider’s authentication: holding the signed text is not enough',
    },
  },
  {
    id: 'ballot-unlinkable',
    claim:
      'No ballot can be linked to a member or wallet, by anyone holding every table of the database and the service’s logs.',
    enforcement:
      'Membership is proved in zero knowledge on the voter’s machine; a ballot row is (proposal, nullifier, root, ciphertext, proof): no member, wallet, time or arrival-ordered id; accepted ballots write no log line.',
    test: {
      file: 'test/governance/anonymity.test.ts',
      name: 'leaves nothing in the database or the logs that joins a ballot to a member',
    },
  },
  {
    id: 'approval-anonymous',
    claim:
      'A proven workflow approval does not say which member of the stage’s approver set made it: not in its reply, its rows or the package.',
    enforcement:
      'Membership is proved in zero knowledge on the approver’s machine (npm run approve); the service keeps the nullifier, root and proof, and records the nullifier as the entry’s actor commitment.',
    test: {
      file: 'test/workflows/approvals.test.ts',
      name: 'is recorded as an approve entry whose actor is the nullifier, and nothing of who',
    },
  },
  {
    id: 'ballot-trustees-only',
    claim:
      'In a room with trustees, no ballot opens before the threshold of trustees decrypts it after the close: not for the operator holding every table, every key of the service and fewer than the threshold of trustees’ shares.',
    enforcement:
      'The joint key comes from the trustees’ own dealings (signed, checked against Feldman commitments); the service keeps public messages only; each ballot proves knowledge of its ephemeral key for its own proposal, so a copy cannot be decrypted under another; trustee clients decrypt only after the close.',
    test: {
      file: 'test/governance/trustees.test.ts',
      name: 'opens no ballot before the close for whoever holds every table, every service key and one trustee’s share',
    },
  },
  {
    id: 'ballot-trustees-provable',
    claim:
      'A vote opened by trustees recomputes offline: every dealing signed by its trustee, the joint key their sum, every partial decryption proved, a wrong one caught.',
    enforcement:
      'Chaum–Pedersen proofs against each trustee’s verification share, at submission and in the package verifier.',
    test: {
      file: 'test/governance/trustees.test.ts',
      name: 'recomputes offline from the package: dealings, joint key, every partial’s proof, every ballot, the tally',
    },
  },
  {
    id: 'ballot-order-independent',
    claim: 'A closed vote publishes its ballots in the same order whatever order they were cast in.',
    enforcement: 'Packages list ballots sorted by nullifier, with no cast time.',
    test: {
      file: 'test/governance/anonymity.test.ts',
      name: 'publishes the same ballots whatever order they were cast in',
    },
  },
  {
    id: 'ballot-once-bound',
    claim:
      'One ballot per member and proposal; a changed vote, a stale root or another room’s tree is refused.',
    enforcement:
      'Unique (proposal, nullifier); the proof is verified against the room’s recent roots, the proposal scope and the ciphertext’s hash.',
    test: {
      file: 'test/governance/governance.test.ts',
      name: 'refuses a second ballot, a tampered vote, a stale or foreign root and bad input — saying nothing of the vote',
    },
  },
  {
    id: 'auction-losers-unnamed',
    claim: 'An auction package names the winner only: losing bids appear as commitments, amounts and fates.',
    enforcement:
      'Commitments hide the bidder behind sha256(salt ‖ bidder); packages drop losers’ wallets, deposits and salts.',
    test: {
      file: 'test/auctions/auctions.test.ts',
      name: 'second price: tie to the earliest commitment, unrevealed excluded and forfeited, late excluded and refunded',
    },
  },
  {
    id: 'idempotency-caller-scoped',
    claim:
      'A response stored under an Idempotency-Key replays only to the caller that sent it (its credential, else its client network); a reply carrying a credential shown once replays only to the authenticated caller that made it.',
    enforcement:
      'The key’s scope is the authenticated principal or the client network, not the header; routes that answer a credential withhold it from anonymous repeats.',
    test: {
      file: 'test/security/idempotency.test.ts',
      name: 'never replays a reply carrying an API key to an anonymous caller, from its address or another',
    },
  },
  {
    id: 'idempotency-sealed',
    claim:
      'A stored idempotent response (API keys, salts) opens only with the server secret and the client’s key together.',
    enforcement:
      'AES-256-GCM under HKDF(server secret ‖ client key); key and request hash are HMACs under the server secret.',
    test: {
      file: 'test/security/idempotency.test.ts',
      name: 'seals stored responses under the server secret and the client key together',
    },
  },
  {
    id: 'egress-no-internal-targets',
    claim:
      'The service sends nothing a caller asks for (webhooks, deliveries, hand-offs) to loopback, private or other internal addresses.',
    enforcement:
      'One egress module: addresses classified with ipaddr.js, resolved once by the connection and pinned, redirects not followed.',
    test: {
      file: 'test/security/egress.test.ts',
      name: 'refuses job webhooks on internal addresses; the loopback listener hears nothing',
    },
  },
  {
    id: 'status-no-internal-addresses',
    claim:
      'Public status answers (provider integrations, runtime proof, payments provider health, readiness, the chain stream) never name where a provider or store listens.',
    enforcement:
      'Probes answer configured, reachable, latency and a stable reason code from fixed text; upstream messages, which carry addresses, go to the log only.',
    test: {
      file: 'test/security/provider-status.test.ts',
      name: 'says configured, reachable, latency and a reason, and names no endpoint',
    },
  },
  {
    id: 'gate-amount-unique',
    claim: 'A payment-gate amount identifies one open request: no two open requests share an amount.',
    enforcement: 'Partial unique index on (asset, amount) where open; a collision draws again.',
    test: { file: 'test/payments/gate.test.ts', name: 'never gives two open requests the same amount' },
  },
];
