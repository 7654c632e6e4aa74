// Offline bundles, end to end: a workflow's and an auction's packages downloaded as bundles (the package
// and a C2SP tlog proof against a witness-cosigned checkpoint) and checked by `npm run verify` against
// a pinned trust root — then again after the service's database is dropped, with no network at all.
// Each tampering (the package, the entry, a proof hash, the checkpoint's signature, a checkpoint of
// another log, a quorum not met, a key the trust root does not list or revoked) fails with its reason;
// the verify page checks a pasted bundle the same way.
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signingKeyFromSeed } from '../../shared/platform/crypto';
import { checkpointText, cosigner, parseCheckpoint } from '../../shared/platform/translog/checkpoint';
import { MemoryLog } from '../../shared/platform/translog/memory-log';
import { formatNote, signatureLine, noteKeyId, SIG_ED25519 } from '../../shared/platform/translog/note';
import { formatTlogProof, parseTlogProof } from '../../shared/platform/translog/proof';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { OPERATOR as GOVERNANCE_OPERATOR, until } from '../governance/helpers';
import { drive, prepare, testProver, waitForPackage } from '../workflows/e2e/helpers';
import type { TestProver } from '../workflows/e2e/helpers';

let app: TestApp | undefined;
let prover: TestProver | undefined;
const dir = mkdtempSync(join(tmpdir(), 'px-bundle-'));
let workflowBundle: Bundle;
let auctionBundle: Bundle;
let trust: TrustRoot;

interface Bundle {
  format: string;
  kind: string;
  package: Record<string, unknown> & { proofId: string; issuedAt: string };
  proof: string;
}
interface TrustRoot {
  log: { origin: string; vkey: string; tiles: string };
  keys: Array<{ keyId: string; publicKey: string; roles: string[]; validFrom: string; revokedFrom?: string }>;
  witnesses: Array<{ name: string; vkey: string }>;
  policy: string;
}

const rawKey = () => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return { raw: publicKey.export({ format: 'der', type: 'spki' }).subarray(12), privateKey };
};
const w1 = (() => {
  const k = rawKey();
  return cosigner('witness-one.test', k.raw, k.privateKey);
})();
const w2 = (() => {
  const k = rawKey();
  return cosigner('witness-two.test', k.raw, k.privateKey);
})();
const COSIGNED_AT = 1_790_000_000; // 2026-09-21

/** Cosigns, as a witness would, the checkpoint of every size the log has signed so far. */
async function cosignAll(db: TestApp['deps']['db']) {
  const rows = (await db('checkpoints').select('tree_size', 'note')) as Array<{
    tree_size: string;
    note: string;
  }>;
  for (const r of rows) {
    const { text } = parseCheckpoint(r.note);
    await db('checkpoint_cosignatures')
      .insert({ tree_size: r.tree_size, witness_name: w1.name, line: w1.cosignLine(text, COSIGNED_AT) })
      .onConflict(['tree_size', 'witness_name'])
      .ignore();
  }
}

/** The trust root a verifier pins: the service's, with a policy that needs witness one. */
const withPolicy = (
  root: TrustRoot,
  witnesses: Array<{ name: string; vkey: string }>,
  quorum: string,
): TrustRoot => ({
  ...root,
  witnesses,
  policy: `log ${root.log.vkey} ${root.log.tiles}\n${witnesses.map((w) => `witness ${w.name} ${w.vkey}`).join('\n')}\nquorum ${quorum}\n`,
});

const write = (name: string, value: unknown) => {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(value));
  return file;
};

/** Can this process give a child no network at all (a network namespace of its own)? */
const isolated = spawnSync('unshare', ['-n', 'true']).status === 0;

/** `npm run verify -- <bundle> --trust <root>` as a user runs it, with no database or Redis configured. */
function verify(bundle: unknown, root: unknown, offline = false) {
  const args = [
    '--import',
    'tsx',
    'cli/verify.ts',
    write('bundle.json', bundle),
    '--trust',
    write('trust.json', root),
  ];
  const [cmd, argv] =
    offline && isolated ? ['unshare', ['-n', process.execPath, ...args]] : [process.execPath, args];
  const run = spawnSync(cmd as string, argv as string[], {
    cwd: process.cwd(),
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: run.status, out: run.stdout, err: run.stderr };
}

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

beforeAll(async () => {
  app = testApp();
  prover = testProver();
  const db = app.deps.db;
  // A finished workflow, its package logged by the prover.
  const w = await prepare(app.request, 'Vendor Onboarding');
  await drive(app.request, w.workflowId, 'Vendor Onboarding');
  await waitForPackage(app.request, w.proofId);
  // A sealed auction with no bids, finalized on the first read after its reveal window.
  const now = Date.now();
  const auction = (
    await app.request
      .post('/api/auctions')
      .set('Authorization', GOVERNANCE_OPERATOR)
      .send({
        title: 'Lot 9',
        asset: 'USDC-SOL',
        pricing: 'first',
        biddingEndsAt: new Date(now + 1000).toISOString(),
        revealEndsAt: new Date(now + 1500).toISOString(),
      })
      .expect(201)
  ).body;
  await until(new Date(now + 1500), 50);
  await app.request.get(`/api/auctions/${auction.auctionId}/package`).expect(200);
  await cosignAll(db);

  workflowBundle = (await app.request.get(`/api/proof-workflows/bundle/${w.proofId}`).expect(200)).body;
  auctionBundle = (await app.request.get(`/api/auctions/${auction.auctionId}/bundle`).expect(200)).body;
  const served = (await app.request.get('/api/proof-workflows/trust-root').expect(200)).body as TrustRoot;
  trust = withPolicy(served, [{ name: 'w1', vkey: w1.vkey }], 'w1');
}, 120_000);

afterAll(async () => {
  await prover?.close();
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('bundles from the service', () => {
  it('carry the package without its log member and a tlog proof against the cosigned checkpoint', async () => {
    expect(workflowBundle).toMatchObject({ format: 'proof-exchange/bundle/v1', kind: 'workflow_package' });
    expect(workflowBundle.package.log).toBeUndefined();
    const proof = parseTlogProof(workflowBundle.proof);
    expect(proof.parsed.note.signatures.map((s) => s.name)).toEqual([trust.log.origin, w1.name]);
    expect(JSON.parse(proof.extra!.toString())).toMatchObject({
      type: 'proof-exchange/log-entry/v1',
      kind: 'workflow_package',
      id: workflowBundle.package.proofId,
    });
    expect(auctionBundle.kind).toBe('auction_package');

    await app!.request.get('/api/proof-workflows/bundle/prf_01jd3zq8y4v6e8k2m0n5p7r9st').expect(404);
    const bad = await app!.request.get('/api/proof-workflows/bundle/not-a-proof').expect(400);
    expect(bad.body.code).toBe('validation_failed');
    // A treasury package is its owner's: no credential, no bundle.
    await app!.request.get('/api/treasury/requests/treq_01jd3zq8y4v6e8k2m0n5p7r9st/bundle').expect(401);
  });

  it('are checked by the verify page when pasted', async () => {
    const ok = await app!.request
      .post('/proof-workflows/verify/')
      .type('form')
      .send({ package: JSON.stringify(workflowBundle) })
      .expect(200);
    expect(ok.text).toContain('data-verdict="verified"');
    expect(ok.text).toContain('valid</span>: the entry names workflow_package');
    // What the verdict does not mean is said beside it, as npm run verify says it.
    expect(ok.text).toContain(
      '<li data-ok="warning"><span class="no">WARNING</span>: approvals are asserted, not proven',
    );
    const changed = clone(workflowBundle);
    (changed.package.stages as Array<{ timestamp: string }>)[0]!.timestamp = '2020-01-01T00:00:00.000Z';
    const bad = await app!.request
      .post('/proof-workflows/verify/')
      .type('form')
      .send({ package: JSON.stringify(changed) })
      .expect(200);
    expect(bad.text).toContain('data-verdict="not-verified"');
    expect(bad.text).toContain('(it was changed)');
  });
});

describe('npm run verify', () => {
  it('says valid for each check of a workflow and an auction bundle, and exits 0', () => {
    const run = verify(workflowBundle, trust);
    expect(run.code, run.out + run.err).toBe(0);
    const lines = run.out.trim().split('\n');
    expect(lines.slice(0, -1).every((l) => l.startsWith('valid: '))).toBe(true);
    expect(lines).toEqual([
      expect.stringMatching(
        new RegExp(
          `^valid: checkpoint of ${trust.log.origin} at size \\d+, signed by the log key ${trust.log.origin}\\+[0-9a-f]{8}$`,
        ),
      ),
      expect.stringMatching(/^valid: witness quorum w1 met: cosigned by w1 at 2026-09-21T/),
      expect.stringMatching(/^valid: entry \d+ is included in the checkpoint/),
      expect.stringMatching(
        new RegExp(
          `^valid: the entry names workflow_package ${workflowBundle.package.proofId} with the package's sha256 [0-9a-f]{64}$`,
        ),
      ),
      expect.stringMatching(/^valid: package prf_\w+ signed by key [0-9a-f]{16}/),
      'valid: package: workflow Vendor Onboarding: existed yes, completed yes, required approvals recorded yes, approvals asserted, not proven, sequence respected yes, not altered yes',
      // No proof to be forged here (no warning of the setup), but approvals that rest on our word.
      'WARNING: approvals are asserted, not proven: the package records who approved, with no membership proof; they rest on the service’s word',
    ]);
    const auction = verify(auctionBundle, trust);
    expect(auction.code, auction.out + auction.err).toBe(0);
    expect(auction.out).toContain('valid: package: auction: reveals open their commitments');
  }, 60_000);

  it('fails a changed package, entry or proof hash, naming why', () => {
    const pkg = clone(workflowBundle);
    (pkg.package.stages as Array<{ timestamp: string }>)[0]!.timestamp = '2020-01-01T00:00:00.000Z';
    const a = verify(pkg, trust);
    expect(a.code).toBe(1);
    expect(a.out).toMatch(
      /^INVALID: the entry names sha256 [0-9a-f]{64}; the package hashes to [0-9a-f]{64} \(it was changed\)$/m,
    );

    // The entry rewritten to name the changed package: it is no longer the leaf the tree holds.
    const entry = clone(workflowBundle);
    const p = parseTlogProof(entry.proof);
    const stmt = JSON.parse(p.extra!.toString()) as { sha256: string };
    const forged = Buffer.from(p.extra!.toString().replace(stmt.sha256, 'f'.repeat(64)));
    entry.proof = formatTlogProof({ ...p, extra: forged });
    const b = verify(entry, trust);
    expect(b.code).toBe(1);
    expect(b.out).toMatch(
      /^INVALID: the inclusion proof of entry \d+ does not lead to the checkpoint's root$/m,
    );

    const hash = clone(workflowBundle);
    const q = parseTlogProof(hash.proof);
    expect(q.path.length).toBeGreaterThan(0);
    q.path[0] = Buffer.from(q.path[0]!.map((x) => x ^ 1));
    hash.proof = formatTlogProof(q);
    const c = verify(hash, trust);
    expect(c.code).toBe(1);
    expect(c.out).toMatch(
      /^INVALID: the inclusion proof of entry \d+ does not lead to the checkpoint's root$/m,
    );
  }, 60_000);

  it('fails a checkpoint whose signature was changed, or of another log', () => {
    const sig = clone(workflowBundle);
    const lines = sig.proof.split('\n');
    const at = lines.findIndex((l) => l.startsWith(`— ${trust.log.origin} `));
    const [, , b64] = lines[at]!.split(' ');
    const bytes = Buffer.from(b64!, 'base64');
    bytes[bytes.length - 1]! ^= 1;
    lines[at] = `— ${trust.log.origin} ${bytes.toString('base64')}`;
    sig.proof = lines.join('\n');
    const a = verify(sig, trust);
    expect(a.code).toBe(1);
    expect(a.out).toMatch(/^INVALID: the checkpoint is not signed by a log key of the trust root$/m);

    // Another log holding the same entry, with a valid checkpoint under its own key and origin.
    const proof = parseTlogProof(workflowBundle.proof);
    const other = new MemoryLog();
    other.append(Buffer.from('something else'));
    const { index } = other.append(proof.extra!);
    const signer = signingKeyFromSeed(Buffer.alloc(32, 7));
    const sign = (origin: string) => {
      const text = checkpointText({ origin, size: other.size, root: other.root() });
      const pub = Buffer.from(signer.publicKey, 'base64url');
      const line = signatureLine(
        origin,
        noteKeyId(origin, SIG_ED25519, pub),
        Buffer.from(signer.sign(text), 'base64url'),
      );
      return formatTlogProof({
        extra: proof.extra,
        index,
        path: other.inclusionProof(index),
        checkpoint: formatNote(text, [line]),
      });
    };
    const foreign = { ...clone(workflowBundle), proof: sign('other.example/log') };
    const b = verify(foreign, trust);
    expect(b.code).toBe(1);
    expect(b.out).toContain(
      `INVALID: the checkpoint is of another log: origin other.example/log, the trust root's is ${trust.log.origin}`,
    );
    // The same origin, another key: a log impersonated.
    const impostor = { ...clone(workflowBundle), proof: sign(trust.log.origin) };
    const c = verify(impostor, trust);
    expect(c.code).toBe(1);
    expect(c.out).toMatch(/^INVALID: the checkpoint is not signed by a log key of the trust root$/m);
  }, 60_000);

  it('fails a quorum not met, and a package key the trust root does not list, or revoked before it was logged', () => {
    const both = withPolicy(
      trust,
      [
        { name: 'w1', vkey: w1.vkey },
        { name: 'w2', vkey: w2.vkey },
      ],
      'both',
    );
    both.policy = both.policy.replace('quorum both', 'group both all w1 w2\nquorum both');
    const a = verify(workflowBundle, both);
    expect(a.code).toBe(1);
    expect(a.out).toContain('INVALID: witness policy: the witness quorum (both) did not cosign it');

    const keyless = { ...clone(trust), keys: trust.keys.filter((k) => !k.roles.includes('package')) };
    const b = verify(workflowBundle, keyless);
    expect(b.code).toBe(1);
    expect(b.out).toMatch(/^INVALID: package signature: The trust root lists no key [0-9a-f]{16}$/m);

    // Revoked from a time before the witness saw the checkpoint: refused; from after it: it holds.
    const revoked = (at: string) => ({
      ...clone(trust),
      keys: trust.keys.map((k) => (k.roles.includes('package') ? { ...k, revokedFrom: at } : k)),
    });
    const c = verify(workflowBundle, revoked('2026-01-01T00:00:00Z'));
    expect(c.code).toBe(1);
    expect(c.out).toMatch(
      /^INVALID: package signature: Key [0-9a-f]{16} is revoked from 2026-01-01T00:00:00Z; the earliest cosignature shows it logged at 2026-09-21T/m,
    );
    const d = verify(workflowBundle, revoked('2027-01-01T00:00:00Z'));
    expect(d.code, d.out).toBe(0);
  }, 90_000);

  it('verifies a bundle with the database dropped and no network reachable', async () => {
    // The bundle and the trust root, copied where a regulator keeps them.
    const keep = mkdtempSync(join(tmpdir(), 'px-kept-'));
    try {
      const bundleFile = join(keep, 'workflow.bundle.json');
      const trustFile = join(keep, 'trust-root.json');
      writeFileSync(bundleFile, JSON.stringify(workflowBundle));
      writeFileSync(trustFile, JSON.stringify(trust));

      await prover!.close();
      await app!.close();
      prover = undefined;
      app = undefined;
      const url = new URL(process.env.DATABASE_URL!);
      const database = url.pathname.slice(1);
      const adminUrl = new URL(url);
      adminUrl.pathname = '/postgres';
      const admin = new pg.Client({ connectionString: adminUrl.toString() });
      await admin.connect();
      await admin.query(`drop database "${database}" with (force)`);
      await admin.end();
      const gone = new pg.Client({ connectionString: url.toString() });
      await expect(gone.connect()).rejects.toThrow(/does not exist/);

      const args = ['--import', 'tsx', 'cli/verify.ts', bundleFile, '--trust', trustFile];
      const run = spawnSync(
        isolated ? 'unshare' : process.execPath,
        isolated ? ['-n', process.execPath, ...args] : args,
        {
          cwd: process.cwd(),
          env: { PATH: process.env.PATH, HOME: process.env.HOME },
          encoding: 'utf8',
          timeout: 60_000,
        },
      );
      if (!isolated) console.info('unshare -n is not available here: the CLI ran with the network present');
      expect(run.status, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toContain('valid: package: workflow Vendor Onboarding: existed yes, completed yes');
      expect(run.stdout).not.toContain('INVALID');
    } finally {
      rmSync(keep, { recursive: true, force: true });
    }
  }, 60_000);
});
