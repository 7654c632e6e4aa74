// A credential signed by a fixed development key (sha256 of "proof-exchange sample issuer"), for the
// circuit build's constraint checks, the tests and the benches. Its values are distinctive so that a
// leak of one is found in a dump. Never an issuer anyone trusts.
import type { CredentialDocument } from './format';

export const SAMPLE_ISSUER_KEY_ID = 'e303317d47029c552c4fa4d6dd5ad9f3389ff49cfd92b991e920994f58db51cb';

export const sampleCredential: CredentialDocument = {
  '@context': ['https://www.w3.org/ns/credentials/v2'],
  type: ['VerifiableCredential', 'ProofExchangeCredential'],
  issuer: {
    id: 'urn:proof-exchange:issuer:e303317d47029c552c4fa4d6dd5ad9f3389ff49cfd92b991e920994f58db51cb',
    name: 'Sample Bureau (development)',
  },
  validFrom: '2026-01-01T00:00:00.000Z',
  validUntil: '2036-01-01T00:00:00.000Z',
  credentialSchema: {
    id: 'urn:proof-exchange:schema:383986990202227342029672210721477262062590030151586863276400410506768835907',
    type: 'ProofExchangeCredentialSchema2026',
    schema: {
      type: 'proof-exchange/credential-schema/v1',
      name: 'credit-report',
      version: 1,
      fields: [
        {
          name: 'score',
          type: 'integer',
        },
        {
          name: 'debtToIncome',
          type: 'integer',
        },
        {
          name: 'reportedAt',
          type: 'date',
        },
        {
          name: 'bureau',
          type: 'enum',
          values: ['equifax', 'experian', 'transunion', 'other'],
        },
      ],
    },
  },
  credentialSubject: {
    id: 'urn:proof-exchange:subject:4102938475610293847561029384756',
    score: 7391,
    debtToIncome: 2958,
    reportedAt: '2026-11-30',
    bureau: 'other',
  },
  credentialStatus: {
    id: 'urn:proof-exchange:revocation:e303317d47029c552c4fa4d6dd5ad9f3389ff49cfd92b991e920994f58db51cb:73920184756',
    type: 'ProofExchangeRevocationNonce2026',
    revocationNonce: '73920184756',
  },
  proof: {
    type: 'ProofExchangeBabyJubJubPoseidon2026',
    verificationMethod:
      'urn:proof-exchange:issuer:e303317d47029c552c4fa4d6dd5ad9f3389ff49cfd92b991e920994f58db51cb#key',
    proofPurpose: 'assertionMethod',
    publicKey: [
      '5839903050684467762140936335343017029785116124990126708526859934199361219624',
      '10899611497818836201663249330259821368227697821061466825340060188932847901722',
    ],
    claimHash: '7390521292633696465027303515972105174209847553919600343355884502481133067324',
    signature: {
      R8: [
        '14864923475055105467716661292955795187588018244931598708500621230160382241350',
        '19052344504627556348501475817842956090541956383444772937576769772807500767994',
      ],
      S: '1848218051157518756566045352110250404908197375973790891245940994782978235160',
    },
  },
};

/** A prover's input for the credential policy: two predicates that the sample satisfies. */
export const sampleQueryInput = {
  credential: sampleCredential as unknown as Record<string, unknown>,
  query: [
    { field: 'score', op: 'gte' as const, value: 7000 },
    { field: 'debtToIncome', op: 'lte' as const, value: 3000 },
  ],
  revoked: ['1111', '2222'],
};
