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
    ],
    private: [
      'documents',
      'thresholds',
      'calculations',
      'reviewer notes',
      'methodology',
      'actor identities (commitments only)',
    ],
    executes: ['client', 'service'],
    notes:
      'Clients send hashes and commitments only; the service chains and signs them; anyone verifies offline.',
  },
  {
    feature: 'blind-policy',
    public: ['policy id', 'Poseidon commitments', 'result', 'Groth16 proof'],
    private: ['policy inputs', 'salts (returned once to the prover caller, never stored)'],
    executes: ['zk-proof', 'service'],
    notes: 'The prover process computes the witness and proof; verification needs only the verification key.',
  },
  {
    feature: 'governance',
    public: ['proposal status', 'time remaining', 'after reveal: ballots, tally and proof package'],
    private: ['during voting: ratios, addresses, intent, momentum, option tallies, even the ballot count'],
    executes: ['client', 'service'],
    notes: 'Ballots are stored encrypted under a per-proposal key until the reveal window.',
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
    public: ['auction status and windows', 'after reveal: winner, commitments and reveals, proof package'],
    private: ['bid amounts, leaders and bidder intent until reveal (bids are sha256 commitments)'],
    executes: ['client', 'service'],
    notes: 'Bidders commit sha256(amount ‖ salt ‖ bidder); the service only sees amounts at reveal.',
  },
  {
    feature: 'checkout',
    public: [
      'license tier and price',
      'asset amount, treasury address, reference, expiry',
      'checkout status by id',
    ],
    private: [
      'buyer email (stored, never logged, never on a public reply)',
      'license token (only to the checkout holder)',
    ],
    executes: ['chain', 'service'],
    notes: 'The worker verifies the transfer and issues an ed25519-signed license that verifies offline.',
  },
  {
    feature: 'private-payments-login',
    public: ['challenge text (title, timestamp, wallet address)'],
    private: [
      'wallet signature (sent to the provider, not to this service)',
      'access token (passed through, never logged or stored)',
      'private balances',
    ],
    executes: ['client', 'provider', 'service'],
    notes:
      'The client signs the challenge and logs in at the provider; balance queries are proxied with the caller’s token.',
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
      file: 'test/workflows-e2e/privacy.test.ts',
      name: 'leaves no private string or plain evidence hash anywhere',
    },
  },
  {
    id: 'blind-policy-inputs',
    claim:
      'Blind policy inputs never appear in a response, log line or table; salts are returned once and not stored.',
    enforcement:
      'Inputs are sealed (AES-256-GCM) to the prover and wiped after proving; public signals are commitments.',
    test: {
      file: 'test/blind-policy/prove.test.ts',
      name: 'leaves no private input in any response, log line or table; salts only in the prove answer',
    },
  },
  {
    id: 'one-transfer-pays-once',
    claim:
      'One on-chain transfer pays for one purchase only, across jobs, checkouts and payment-gate requests.',
    enforcement: 'Unique (chain, tx_ref, output) in payment_claims, taken in the settling transaction.',
    test: {
      file: 'test/commercial/checkout.test.ts',
      name: 'refuses a transfer already credited to another checkout',
    },
  },
  {
    id: 'checkout-email-private',
    claim:
      'A buyer’s email is stored for the license record but never logged and never shown on a public reply.',
    enforcement: 'Checkout views omit it; log lines carry ids only.',
    test: {
      file: 'test/commercial/checkout.test.ts',
      name: 'never shows the email on a public reply or in a log line',
    },
  },
  {
    id: 'license-offline',
    claim:
      'A license is checkable offline with the published service key, and a forged or altered one is refused.',
    enforcement: 'ed25519 signature over the canonical payload; verifyLicense is a pure function.',
    test: {
      file: 'test/commercial/checkout.test.ts',
      name: 'runs a paid checkout end to end on a real chain',
    },
  },
  {
    id: 'license-issued-once',
    claim: 'A paid checkout issues exactly one license, however often or concurrently it is verified.',
    enforcement: 'Conditional updates on the checkout state and a unique license per checkout.',
    test: {
      file: 'test/commercial/checkout.test.ts',
      name: 'issues one license however many times verify is called at once',
    },
  },
  {
    id: 'handoff-token-not-logged',
    claim: 'The private-payments access token is passed through to the provider and never logged or stored.',
    enforcement:
      'The proxy forwards the Authorization header only; the logger redacts authorization headers.',
    test: {
      file: 'test/commercial/handoff.test.ts',
      name: 'logs a real wallet in at the stand-in and reads demo balances through the proxy',
    },
  },
  {
    id: 'handoff-challenge-single-use',
    claim: 'A private-payments login challenge logs in once, before it expires, and only as issued.',
    enforcement:
      'The service records the hash of each issued text; the provider redeems it through one conditional update.',
    test: {
      file: 'test/commercial/handoff.test.ts',
      name: 'refuses a replayed challenge: it logs in once',
    },
  },
  {
    id: 'gate-amount-unique',
    claim: 'A payment-gate amount identifies one open request: no two open requests share an amount.',
    enforcement: 'Partial unique index on (asset, amount) where open; a collision draws again.',
    test: { file: 'test/commercial/gate.test.ts', name: 'never gives two open requests the same amount' },
  },
];
