// Credentials as docs/credentials.md specifies them. An issuer written from that document alone (below:
// circomlibjs and node:crypto, nothing of the project) issues a credential that the project's checker
// accepts, and the project's issuer, given the same key, claim and nonce, signs the same claim hash
// with the same signature (EdDSA-Poseidon is deterministic). Every alteration is refused by name; the
// issuer's command line (px issuer) makes keys, issues, checks, revokes and publishes offline.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildEddsa, buildPoseidon, newMemEmptyTrie } from 'circomlibjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main as issuerMain } from '../../cli/issuer';
import { checkCredential } from '../../shared/credentials/format';
import {
  issueCredential,
  newIssuerKey,
  revocationRoot,
  revoke,
  emptyRevocations,
} from '../../shared/credentials/issuer';

const schema = {
  type: 'proof-exchange/credential-schema/v1',
  name: 'credit-report',
  version: 1,
  fields: [
    { name: 'score', type: 'integer' },
    { name: 'debtToIncome', type: 'integer' },
    { name: 'reportedAt', type: 'date' },
    { name: 'region', type: 'enum', values: ['us', 'eu'] },
    { name: 'bureauFile', type: 'string' },
  ],
} as const;

const subject = '4242424242424242424242424242424242';
const nonce = '987654321987654321';
const privateKey = Buffer.alloc(32, 7);

// ---- An issuer from docs/credentials.md alone -------------------------------------------------------

/** RFC 8785 for what a schema holds (strings, integers, arrays, objects): sorted keys, no whitespace. */
function jcs(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(jcs).join(',')}]`;
  if (v !== null && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${jcs((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}
const h248 = (text: string) => BigInt(`0x${createHash('sha256').update(text, 'utf8').digest('hex')}`) >> 8n;
const seconds = (iso: string) => BigInt(Math.floor(Date.parse(iso) / 1000));

async function independentIssuer(claim: {
  fields: Record<string, number | string>;
  validFrom: string;
  validUntil: string;
}) {
  const eddsa = await buildEddsa();
  const poseidon = await buildPoseidon();
  const F = eddsa.F;
  const schemaIdValue = h248(`proof-exchange/credential-schema/v1\n${jcs(schema)}`);
  const encoded = schema.fields.map((f) => {
    const v = claim.fields[f.name]!;
    if (f.type === 'integer') return BigInt(v);
    if (f.type === 'date') return seconds(String(v));
    if (f.type === 'enum') return BigInt((f.values as readonly string[]).indexOf(String(v)));
    return h248(`proof-exchange/credential-string/v1\n${String(v).normalize('NFC')}`);
  });
  const vector = [
    schemaIdValue,
    BigInt(subject),
    seconds(claim.validFrom),
    seconds(claim.validUntil),
    BigInt(nonce),
    ...encoded,
    ...Array(8 - encoded.length).fill(0n),
  ];
  const hash = poseidon.F.toObject(poseidon(vector));
  const [ax, ay] = eddsa.prv2pub(privateKey).map((p) => String(F.toObject(p)));
  const keyId = createHash('sha256').update(`proof-exchange/issuer-key/v1\n${ax}\n${ay}`).digest('hex');
  const sig = eddsa.signPoseidon(privateKey, F.e(hash));
  const issuer = `urn:proof-exchange:issuer:${keyId}`;
  return {
    '@context': ['https://www.w3.org/ns/credentials/v2'],
    type: ['VerifiableCredential', 'ProofExchangeCredential'],
    issuer: { id: issuer, name: 'Independent Bureau' },
    validFrom: claim.validFrom,
    validUntil: claim.validUntil,
    credentialSchema: {
      id: `urn:proof-exchange:schema:${schemaIdValue}`,
      type: 'ProofExchangeCredentialSchema2026',
      schema,
    },
    credentialSubject: { id: `urn:proof-exchange:subject:${subject}`, ...claim.fields } as Record<
      string,
      string | number
    >,
    credentialStatus: {
      id: `urn:proof-exchange:revocation:${keyId}:${nonce}`,
      type: 'ProofExchangeRevocationNonce2026',
      revocationNonce: nonce,
    },
    proof: {
      type: 'ProofExchangeBabyJubJubPoseidon2026',
      verificationMethod: `${issuer}#key`,
      proofPurpose: 'assertionMethod',
      publicKey: [ax, ay],
      claimHash: String(hash),
      signature: { R8: sig.R8.map((p) => String(F.toObject(p))), S: String(sig.S) },
    },
  };
}

// ------------------------------------------------------------------------------------------------------

const claim = {
  fields: { score: 742, debtToIncome: 31, reportedAt: '2026-11-30', region: 'us', bureauFile: 'AC-1138' },
  validFrom: '2026-12-01T00:00:00.000Z',
  validUntil: '2027-06-01T00:00:00.000Z',
};

let doc: Awaited<ReturnType<typeof independentIssuer>>;

beforeAll(async () => {
  doc = await independentIssuer(claim);
});

afterAll(async () => {
  await (globalThis as { curve_bn128?: { terminate(): Promise<void> } }).curve_bn128?.terminate();
});

describe('a credential from an issuer written from docs/credentials.md alone', () => {
  it('is accepted by the project’s checker, and is what the project’s issuer signs for the same claim', async () => {
    expect(await checkCredential(doc)).toMatchObject({ ok: true, problems: [] });
    const key = await newIssuerKey('Independent Bureau', privateKey);
    const ours = await issueCredential(key, {
      schema: schema as never,
      subject,
      validFrom: claim.validFrom,
      validUntil: claim.validUntil,
      revocationNonce: nonce,
      fields: claim.fields,
    });
    expect(ours).toEqual(doc);
  });

  it('is refused, by name, once anything in it changes', async () => {
    const problems = async (change: (d: typeof doc) => void) => {
      const changed = structuredClone(doc);
      change(changed);
      const checked = await checkCredential(changed);
      expect(checked.ok).toBe(false);
      return checked.problems.join('\n');
    };
    expect(await problems((d) => (d.credentialSubject.score = 801))).toContain(
      'proof.claimHash is not the Poseidon hash',
    );
    expect(await problems((d) => (d.credentialSubject.id = 'urn:proof-exchange:subject:1'))).toContain(
      'not the Poseidon hash',
    );
    expect(await problems((d) => (d.validUntil = '2028-06-01T00:00:00.000Z'))).toContain(
      'not the Poseidon hash',
    );
    // A hash recomputed for the change still carries the old signature.
    const forged = structuredClone(doc);
    forged.credentialSubject.score = 801;
    forged.proof.claimHash = (
      await independentIssuer({ ...claim, fields: { ...claim.fields, score: 801 } })
    ).proof.claimHash;
    expect((await checkCredential(forged)).problems).toContain(
      'the signature does not verify under proof.publicKey',
    );
    // Another key under the same issuer id, an enum value outside the schema, a malformed document.
    expect(
      await problems((d) => (d.proof.publicKey = [d.proof.publicKey[1], d.proof.publicKey[0]])),
    ).toContain('issuer.id is not the urn of the key');
    expect(await problems((d) => (d.credentialSubject.region = 'mars'))).toContain('region: one of us, eu');
    expect(await problems((d) => ((d as Record<string, unknown>).extra = 1))).toContain('Unrecognized key');
  });

  it('proves a query over it that the snarkjs CLI verifies with the committed (and served) key', async () => {
    const { provePolicy } = await import('../../shared/zk');
    const { localProverBackend } = await import('../../shared/zk/local-prover');
    const { artifactPaths } = await import('../../shared/zk/artifacts');
    // Four predicates at once, none revealing a field: a string field compared for equality by its hash.
    const proved = await provePolicy(
      await localProverBackend(),
      'credential',
      {
        credential: doc,
        query: [
          { field: 'score', op: 'gte', value: 700 },
          { field: 'debtToIncome', op: 'between', low: 10, high: 40 },
          { field: 'region', op: 'in', values: ['us', 'eu'] },
          { field: 'bureauFile', op: 'eq', value: 'AC-1138' },
        ],
        revoked: [],
        now: Math.floor(Date.parse('2027-01-01T00:00:00Z') / 1000),
      },
      undefined,
      { context: 7n },
    );
    const dir = mkdtempSync(join(tmpdir(), 'px-query-'));
    try {
      writeFileSync(join(dir, 'public.json'), JSON.stringify(proved.publicSignals));
      writeFileSync(join(dir, 'proof.json'), JSON.stringify(proved.proof));
      const { stdout } = await new Promise<{ stdout: string }>((done, fail) =>
        execFile(
          process.execPath,
          [
            'node_modules/snarkjs/build/cli.cjs',
            'groth16',
            'verify',
            artifactPaths('credential').vkey,
            join(dir, 'public.json'),
            join(dir, 'proof.json'),
          ],
          (err, out) => (err ? fail(err) : done({ stdout: out })),
        ),
      );
      expect(stdout).toContain('OK!');
      // The issuer's key and the subject are public; no field is.
      expect(proved.publicSignals).toContain(doc.proof.publicKey[0]);
      expect(proved.publicSignals).toContain(subject);
      expect(proved.publicSignals).not.toContain('742');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the issuer’s command line (px issuer), offline', () => {
  const dir = mkdtempSync(join(tmpdir(), 'px-issuer-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const run = async (...argv: string[]) => {
    let stdout = '';
    let stderr = '';
    const code = await issuerMain(argv, {
      stdout: { write: (c) => (stdout += String(c)) },
      stderr: { write: (c) => (stderr += String(c)) },
      env: {},
    });
    return { code, stdout, stderr };
  };

  it('makes a key, issues a credential that checks, revokes it, and publishes the root', async () => {
    const key = join(dir, 'issuer.key.json');
    const made = await run('keys', '--name', 'Acme Credit Bureau', '--out', key);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).not.toContain('privateKey');
    expect((await run('keys', '--name', 'again', '--out', key)).stderr).toContain('not overwriting');
    writeFileSync(join(dir, 'schema.json'), JSON.stringify(schema));
    const cred = join(dir, 'cred.json');
    const issued = await run(
      'issue',
      '--key',
      key,
      '--schema',
      join(dir, 'schema.json'),
      '--subject',
      subject,
      '--valid-until',
      '2027-06-01T00:00:00Z',
      ...Object.entries(claim.fields).flatMap(([k, v]) => ['--field', `${k}=${v}`]),
      '--out',
      cred,
    );
    expect(issued.code, issued.stderr).toBe(0);
    const checked = await run('check', cred);
    expect(checked.code, checked.stderr).toBe(0);
    expect(JSON.parse(checked.stdout)).toMatchObject({ ok: true });
    const bad = JSON.parse(readFileSync(cred, 'utf8'));
    bad.credentialSubject.score = 100;
    writeFileSync(join(dir, 'bad.json'), JSON.stringify(bad));
    expect((await run('check', join(dir, 'bad.json'))).code).toBe(1);

    const nonceOf = JSON.parse(readFileSync(cred, 'utf8')).credentialStatus.revocationNonce as string;
    const revoked = await run(
      'revoke',
      '--key',
      key,
      '--revocations',
      join(dir, 'revoked.json'),
      '--nonce',
      nonceOf,
    );
    expect(revoked.code, revoked.stderr).toBe(0);
    const root = JSON.parse(revoked.stdout).root as string;
    const published = await run(
      'publish',
      '--key',
      key,
      '--revocations',
      join(dir, 'revoked.json'),
      '--schema',
      join(dir, 'schema.json'),
    );
    expect(published.code, published.stderr).toBe(0);
    expect(JSON.parse(published.stdout)).toMatchObject({ revocation: { root, revoked: 1 } });
    // The root is circomlibjs's Poseidon sparse Merkle tree of the revoked nonces (value 1).
    const tree = await newMemEmptyTrie();
    await tree.insert(BigInt(nonceOf), 1n);
    expect(root).toBe(String(tree.F.toObject(tree.root)));
    expect(await revocationRoot(revoke(emptyRevocations('0'.repeat(64)), nonceOf, new Date()))).toBe(root);
    expect(await revocationRoot(emptyRevocations('0'.repeat(64)))).toBe('0');
  });

  it('says what is wrong with a command, and exits 1', async () => {
    const wrong = await run('issue', '--key', join(dir, 'none.json'));
    expect(wrong.code).toBe(1);
    expect((await run('bogus')).stderr).toContain('unknown command bogus');
    expect((await run('--help')).code).toBe(0);
  });
});

describe('docs/credentials.md', () => {
  it('runs its issuer walkthrough as written, with nothing of the service running', async () => {
    const doc = readFileSync(join(process.cwd(), 'docs', 'credentials.md'), 'utf8');
    // The issuer's tooling section: the workflow walkthrough below it needs the service.
    const start = doc.indexOf("\n## The issuer's tooling\n");
    const section = doc.slice(start, doc.indexOf('\n## ', start + 1));
    const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
    expect(blocks).toHaveLength(1);
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        'bash',
        ['--norc', '-euo', 'pipefail', '-c', blocks[0]!],
        {
          cwd: process.cwd(),
          encoding: 'utf8',
          timeout: 120_000,
          env: { ...process.env, PX_URL: 'http://127.0.0.1:9' },
        },
        (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
      ),
    );
    expect(out).toContain('"ok": true');
    expect(out).toContain('"type": "proof-exchange/issuer/v1"');
    expect(out).toMatch(/"revoked": 1/);
  }, 130_000);
});
