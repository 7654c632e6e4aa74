// Rotating the signing keys of a running deployment, as docs/security.md has an operator do it, with the
// real processes (`web`, `worker`, `prover`, and `npm run keys`) on this file's database and a local EVM
// node: under key A a workflow package, a paid job's receipt and batch attestation, a timestamp
// attestation and a TRIAL license; the web restarted alone with key B while the worker and prover still
// sign with A (a workflow completed meanwhile is packaged with A and must verify); the worker and
// prover restarted with B; A retired. Everything signed before verifies in the API, on the page and
// offline with the trust root (the receipt CLI with --trust), new items are signed with B, and a process
// started with A refuses to start in one line. Then B revoked from a time T: what B signed and logged
// before T holds, what it signed after fails `revoked`.
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPaidChain } from '../exchange/paid';
// Type-only imports load nothing before the env names the chain.
import type { Receipt } from '../../shared/payments/receipts';
import type { TimestampAttestation } from '../../shared/jobs/attest';
import type { BatchAttestation } from '../../shared/jobs/services/attest-batch';
import type { Db } from '../../shared/platform/db/knex';
import type { TrustRoot } from '../../shared/platform/trust';
import type { WorkflowPackage } from '../../shared/workflows/package';
import { processArgs } from '../processes';

// The node first: the processes this file starts take their chain settings from its environment.
const { chain, payer, usdc } = await startPaidChain();

const { freePort } = await import('../../dev/stack/redis');
const { createDb } = await import('../../shared/platform/db/knex');
const { signingKeyFromSeed, sha256Hex } = await import('../../shared/platform/crypto');
const { verifyPackage } = await import('../../shared/workflows/package');
const { verifyTimestamp } = await import('../../shared/jobs/attest');
const { verifyBatchInclusion } = await import('../../shared/jobs/services/attest-batch');
const { parseTrustRoot } = await import('../../shared/platform/trust');
const { eventually, waitForJob, bearer } = await import('../helpers');
const { trialProof } = await import('../licensing/helpers');
const { drive, prepare, waitForPackage } = await import('../workflows/e2e/helpers');

const seeds = {
  A: '1a'.repeat(32),
  B: '2b'.repeat(32),
  logA: '3c'.repeat(32),
  logB: '4d'.repeat(32),
};
const key = (seed: string) => signingKeyFromSeed(Buffer.from(seed, 'hex'));
const A = key(seeds.A);
const B = key(seeds.B);
const logA = key(seeds.logA);
const logB = key(seeds.logB);
const TEMPLATE = 'Vendor Onboarding';

type Kind = 'web' | 'worker' | 'prover';

interface Proc {
  kind: Kind;
  child: ChildProcess;
  output: string[];
  /** Settles when the process says it is ready (or could not start: the line it said). */
  ready: Promise<void>;
  exited: Promise<number | null>;
  base?: string;
}

const running = new Set<Proc>();

async function start(kind: Kind, keys: { service: string; log: string }): Promise<Proc> {
  const port = kind === 'web' ? await freePort() : undefined;
  const child = spawn(process.execPath, processArgs(kind), {
    env: {
      ...process.env,
      VITEST: '',
      HOST: '127.0.0.1',
      ...(port ? { PORT: String(port) } : {}),
      LOG_LEVEL: 'warn',
      SERVICE_SIGNING_KEY: keys.service,
      LOG_SIGNING_KEY: keys.log,
      TRIAL_PER_ADDRESS_PER_DAY: '100',
      RATE_LIMIT_ENABLED: 'false',
      PROVER_CONCURRENCY: '1',
      ...pinned,
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const output: string[] = [];
  const keep = (chunk: Buffer) => output.push(chunk.toString());
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const ready = new Promise<void>((resolve, reject) => {
    child.on('message', (m: { px?: string; what?: string }) => {
      if (m.px === 'ready') resolve();
      if (m.px === 'failed') reject(new Error(`${kind} failed: ${m.what}`));
    });
    void exited.then((code) => reject(new Error(`${kind} exited ${code}: ${output.join('')}`)));
  });
  ready.catch(() => undefined);
  const proc: Proc = {
    kind,
    child,
    output,
    ready,
    exited,
    ...(port ? { base: `http://127.0.0.1:${port}` } : {}),
  };
  running.add(proc);
  return proc;
}

async function stop(p: Proc): Promise<void> {
  running.delete(p);
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill('SIGTERM');
  const timer = setTimeout(() => p.child.kill('SIGKILL'), 10_000);
  await p.exited;
  clearTimeout(timer);
}

/** `npm run keys -- …`, as the operator runs it (with the deployment's settings, and `extra`). */
function keysCli(args: string[], extra: Record<string, string> = {}) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'cli/keys.ts', ...args], {
    env: { ...process.env, VITEST: '', LOG_LEVEL: 'warn', ...extra },
    encoding: 'utf8',
  });
}

/** What every process gets besides its keys: the keys derived from A, pinned before the rotation. */
const pinned: Record<string, string> = {};

/** `npm run receipt:verify -- …`. */
function receiptCli(...args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'cli/verify-receipt.ts', ...args], {
    env: { ...process.env, VITEST: '' },
    encoding: 'utf8',
  });
}

const dir = mkdtempSync(join(tmpdir(), 'px-rotation-'));
let web: Proc;
let worker: Proc;
let prover: Proc;
const api = () => supertest(web.base!);

/** A Vendor Onboarding workflow driven to completion through the web; its verdict once packaged. */
async function completedWorkflow() {
  const { workflowId, proofId } = await prepare(api(), TEMPLATE);
  await drive(api(), workflowId, TEMPLATE);
  const verdict = await waitForPackage(api(), proofId);
  return { proofId, pkg: verdict.package as WorkflowPackage };
}

let orgs = 0;
/** A TRIAL license claimed through the web: its key (lk_…), and the key id its payload names. */
async function trialLicense() {
  const res = await api()
    .post('/api/v1/commercial/checkout/prepare')
    .send({
      license: 'TRIAL',
      organization: `Rotation Org ${++orgs}`,
      email: 'ops@example.test',
      ...(await trialProof(api())),
    });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const token = res.body.checkout.license.token as string;
  const payload = JSON.parse(Buffer.from(token.slice(3).split('.')[0]!, 'base64url').toString()) as {
    keyId: string;
  };
  return { token, keyId: payload.keyId };
}

const licenseStatus = async (token: string) =>
  (await api().get('/api/v1/commercial/license').set(bearer(token))).status;

/** A free timestamp attestation, signed by whichever worker runs the job. */
async function attestation(text: string) {
  const created = await api()
    .post('/api/jobs')
    .send({ service: 'attest.timestamp', input: { digest: sha256Hex(text) } })
    .expect(202);
  const job = await waitForJob(api(), created.body.job.id, created.body.accessToken);
  expect(job.status).toBe('succeeded');
  return job.result as unknown as TimestampAttestation;
}

/** A priced batch attestation paid on the local node: its receipt and its signed batch. */
async function paidJob(text: string) {
  const created = await api()
    .post('/api/jobs')
    .send({ service: 'attest.batch', input: { digests: [sha256Hex(text), sha256Hex(`${text} 2`)] } })
    .expect(402);
  const token = created.body.accessToken as string;
  const jobId = created.body.job.id as string;
  const quote = created.body.payment.quotes.find((q: { asset: string }) => q.asset === 'USDC-ETH');
  const tx = await chain.transferToken(usdc, payer, quote.payTo, BigInt(quote.amount));
  await chain.mine(1);
  await api()
    .post(`/api/jobs/${jobId}/payment`)
    .set(bearer(token))
    .send({ asset: 'USDC-ETH', txRef: tx, payer })
    .expect(202);
  const job = await waitForJob(api(), jobId, token, 30_000);
  expect(job.status).toBe('succeeded');
  const status = (await api().get(`/api/jobs/${jobId}`).set(bearer(token)).expect(200)).body;
  const receipt = (await api().get(new URL(status.job.links.receipt).pathname).expect(200)).body
    .receipt as Receipt;
  return { receipt, batch: job.result as unknown as BatchAttestation };
}

async function verifiedInApi(proofId: string, pkg: WorkflowPackage) {
  const byId = (await api().post('/api/proof-workflows/verify').send({ proofId }).expect(200)).body;
  const pasted = (await api().post('/api/proof-workflows/verify').send({ package: pkg }).expect(200)).body;
  return { byId, pasted };
}

const page = async (proofId: string) =>
  /data-verdict="([a-z-]+)"/.exec(
    (await api().get(`/proof-workflows/verify/${proofId}/`).expect(200)).text,
  )?.[1];

const allHold = {
  existed: true,
  completed: true,
  approvalsMet: true,
  sequenceRespected: true,
  notAltered: true,
  signatureValid: true,
  inclusionValid: true,
};

async function trustRoot(): Promise<{ root: TrustRoot; file: string }> {
  const res = await api().get('/api/proof-workflows/trust-root').expect(200);
  const file = join(dir, `trust-root-${Date.now()}.json`);
  writeFileSync(file, JSON.stringify(res.body));
  return { root: parseTrustRoot(res.body), file };
}

let db: Db;
const licenseCount = async () => Number((await db('licenses').count({ n: '*' }))[0]!.n);

const logs = () => [...running].map((p) => `--- ${p.kind}\n${p.output.join('').slice(-3000)}`).join('\n');

// What was made, by phase, for the checks after the rotation.
const made: {
  w1?: { proofId: string; pkg: WorkflowPackage };
  w2?: { proofId: string; pkg: WorkflowPackage };
  l1?: { token: string; keyId: string };
  l2?: { token: string; keyId: string };
  t1?: TimestampAttestation;
  t2?: TimestampAttestation;
  paid?: { receipt: Receipt; batch: BatchAttestation };
} = {};

beforeAll(async () => {
  db = createDb(undefined, { poolMax: 2 });
  const under = { service: seeds.A, log: seeds.logA };
  [web, worker, prover] = await Promise.all([
    start('web', under),
    start('worker', under),
    start('prover', under),
  ]);
  await Promise.all([web.ready, worker.ready, prover.ready]).catch((err: Error) => {
    throw new Error(`${err.message}\n${logs()}`);
  });
}, 120_000);

afterAll(async () => {
  await Promise.allSettled([...running].map(stop));
  await db?.destroy();
  await chain.close();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('rotating the signing keys of a running deployment', () => {
  it('signs a workflow package, a receipt, attestations and a TRIAL license with key A', async () => {
    made.w1 = await completedWorkflow();
    expect(made.w1.pkg.issuer.keyId).toBe(A.keyId);
    made.l1 = await trialLicense();
    expect(made.l1.keyId).toBe(A.keyId);
    made.t1 = await attestation('before the rotation');
    expect(made.t1.keyId).toBe(A.keyId);
    made.paid = await paidJob('paid before the rotation');
    expect(made.paid.receipt.keyId).toBe(A.keyId);
    expect(made.paid.batch.keyId).toBe(A.keyId);
  }, 120_000);

  it('restarts the web alone with key B: what the worker and prover still sign with A verifies', async () => {
    // First, the keys still derived from A are pinned as settings, so that what they sealed opens
    // under B too.
    const derived = keysCli(['derived'], { SERVICE_SIGNING_KEY: seeds.A });
    expect(derived.status, derived.stderr).toBe(0);
    const lines = derived.stdout.trim().split('\n');
    expect(lines.map((l) => l.split('=')[0])).toEqual(['SEALING_KEY', 'BALLOT_KEY', 'PROOF_INPUT_KEY']);
    for (const line of lines) {
      const [name, value] = line.split('=') as [string, string];
      expect(value).toMatch(/^[0-9a-f]{128}$/);
      pinned[name] = value;
    }
    await stop(web);
    web = await start('web', { service: seeds.B, log: seeds.logB });
    await web.ready;
    // Completed through the new web, packaged by the prover that still has A.
    made.w2 = await completedWorkflow();
    expect(made.w2.pkg.issuer.keyId).toBe(A.keyId);
    const { byId } = await verifiedInApi(made.w2.proofId, made.w2.pkg);
    expect(byId, JSON.stringify(byId.reasons)).toMatchObject(allHold);
    expect(await page(made.w2.proofId)).toBe('verified');
    // The web signs with B, the worker with A; both keys are current.
    made.l2 = await trialLicense();
    expect(made.l2.keyId).toBe(B.keyId);
    made.t2 = await attestation('web on B, worker on A');
    expect(made.t2.keyId).toBe(A.keyId);
    const { root } = await trustRoot();
    const byId2 = new Map(root.keys.map((k) => [k.keyId, k]));
    expect(byId2.get(A.keyId)).toMatchObject({ roles: ['attestation', 'license', 'package', 'receipt'] });
    expect(byId2.get(B.keyId)).toMatchObject({ roles: ['attestation', 'license', 'package', 'receipt'] });
    expect(byId2.get(A.keyId)!.validUntil).toBeUndefined();
    expect(byId2.get(logB.keyId)!.roles).toEqual(['log']);
  }, 120_000);

  it('restarts the worker and prover with B, then retires A with npm run keys', async () => {
    await Promise.all([stop(worker), stop(prover)]);
    const under = { service: seeds.B, log: seeds.logB };
    [worker, prover] = await Promise.all([start('worker', under), start('prover', under)]);
    await Promise.all([worker.ready, prover.ready]);
    const list = keysCli(['list']);
    expect(list.status, list.stderr).toBe(0);
    for (const k of [A, B, logA, logB])
      expect(list.stdout).toMatch(new RegExp(`^${k.keyId} .* current$`, 'm'));
    for (const k of [A, logA]) {
      const retired = keysCli(['retire', k.keyId]);
      expect(retired.status, retired.stderr).toBe(0);
      expect(retired.stdout).toMatch(new RegExp(`^retired: ${k.keyId} `));
    }
    expect(keysCli(['list']).stdout).toMatch(new RegExp(`^${A.keyId} .* was retired`, 'm'));
  }, 120_000);

  it('still verifies everything signed under A — in the API, on the page and offline — and signs new items with B', async () => {
    const { w1, w2, l1, l2, t1, t2, paid } = made as Required<typeof made>;
    for (const w of [w1, w2]) {
      const { byId, pasted } = await verifiedInApi(w.proofId, w.pkg);
      expect(byId, JSON.stringify(byId.reasons)).toMatchObject(allHold);
      expect(pasted, JSON.stringify(pasted.reasons)).toMatchObject(allHold);
      expect(await page(w.proofId)).toBe('verified');
    }
    // The web rereads the history within a few seconds of the retirement.
    const { root, file } = await eventually(
      async () => {
        const got = await trustRoot();
        return got.root.keys.find((k) => k.keyId === A.keyId)!.validUntil ? got : undefined;
      },
      15_000,
      250,
    );
    expect(root.log.vkey).toBe(root.keys.find((k) => k.keyId === logB.keyId)!.vkey);
    // Offline, with the trust root alone; the bare new key (all a verifier had before) does not do.
    for (const w of [w1, w2]) {
      expect(verifyPackage(w.pkg, root)).toMatchObject(allHold);
      expect(verifyPackage(w.pkg, { publicKey: B.publicKey }).reasons[0]).toMatchObject({
        code: 'unknown_key',
      });
    }
    const receiptFile = join(dir, 'receipt.json');
    writeFileSync(receiptFile, JSON.stringify({ receipt: paid.receipt }));
    const cli = receiptCli(receiptFile, '--trust', file);
    expect(cli.status, cli.stdout + cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(new RegExp(`^valid: receipt ${paid.receipt.id} signed by ${A.keyId}`));
    const bare = receiptCli(receiptFile, B.publicKey);
    expect(bare.status).toBe(1);
    expect(bare.stdout).toMatch(/^INVALID: .*unknown_key/);
    for (const t of [t1, t2]) expect(verifyTimestamp(t, root)).toBe(true);
    for (const inclusion of paid.batch.inclusions)
      expect(verifyBatchInclusion(paid.batch, inclusion, root)).toBe(true);
    expect(await licenseStatus(l1.token)).toBe(200);
    expect(await licenseStatus(l2.token)).toBe(200);

    // New ones: B everywhere (the log key B for the tree heads).
    const w3 = await completedWorkflow();
    expect(w3.pkg.issuer.keyId).toBe(B.keyId);
    expect(w3.pkg.log!.treeHead.keyId).toBe(logB.keyId);
    expect((await attestation('after the rotation')).keyId).toBe(B.keyId);
    expect((await trialLicense()).keyId).toBe(B.keyId);
  }, 180_000);

  it('refuses to start a process with the retired key A, in one line naming the fix', async () => {
    for (const kind of ['worker', 'web'] as const) {
      const p = await start(kind, { service: seeds.A, log: seeds.logB });
      await expect(p.ready).rejects.toThrow();
      expect(await p.exited).toBe(1);
      running.delete(p);
      const lines = p.output.join('').trim().split('\n');
      expect(lines, `${kind}: ${p.output.join('')}`).toHaveLength(1);
      expect(lines[0]).toBe(
        `SERVICE_SIGNING_KEY is key ${A.keyId}, which was retired (valid until ${
          (await trustRoot()).root.keys.find((k) => k.keyId === A.keyId)!.validUntil
        }): set SERVICE_SIGNING_KEY to the new key on this process and start it again (docs/security.md, "Rotating a signing key")`,
      );
    }
  }, 120_000);

  it('revokes B from a time T: what B signed and logged before T holds, what it signed after fails', async () => {
    const before = await completedWorkflow();
    const licenseBefore = await trialLicense();
    await new Promise((r) => setTimeout(r, 50));
    const T = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 50));
    const after = await completedWorkflow();
    const licenseAfter = await trialLicense();
    expect([before.pkg.issuer.keyId, after.pkg.issuer.keyId, licenseAfter.keyId]).toEqual([
      B.keyId,
      B.keyId,
      B.keyId,
    ]);

    const revoked = keysCli(['revoke', B.keyId, '--from', T, '--reason', 'test: key leaked']);
    expect(revoked.status, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain(`is revoked from ${T}`);

    // The web rereads the history within a few seconds.
    await eventually(
      async () =>
        (await api().post('/api/proof-workflows/verify').send({ proofId: after.proofId })).body
          .signatureValid === false,
      15_000,
      250,
    );
    const late = (
      await api().post('/api/proof-workflows/verify').send({ proofId: after.proofId }).expect(200)
    ).body;
    expect(late.notAltered).toBe(false);
    expect(late.reasons).toContainEqual(
      expect.objectContaining({ check: 'signatureValid', code: 'revoked' }),
    );
    expect(await page(after.proofId)).toBe('not-verified');
    const latePasted = (
      await api().post('/api/proof-workflows/verify').send({ package: after.pkg }).expect(200)
    ).body;
    expect(latePasted.reasons.map((r: { code: string }) => r.code)).toContain('revoked');

    const { byId, pasted } = await verifiedInApi(before.proofId, before.pkg);
    expect(byId, JSON.stringify(byId.reasons)).toMatchObject(allHold);
    expect(pasted, JSON.stringify(pasted.reasons)).toMatchObject(allHold);
    expect(await page(before.proofId)).toBe('verified');
    // Signed before A was retired, by A: untouched.
    expect((await verifiedInApi(made.w1!.proofId, made.w1!.pkg)).byId).toMatchObject(allHold);

    expect(await licenseStatus(licenseBefore.token)).toBe(200);
    const refused = await api().get('/api/v1/commercial/license').set(bearer(licenseAfter.token));
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('license_key_revoked');

    // Offline, nothing shows when a package was logged: a revoked key's signature does not hold there.
    const { root } = await trustRoot();
    expect(verifyPackage(before.pkg, root).reasons[0]).toMatchObject({ code: 'revoked' });

    // The processes that hold B sign nothing more: the web says it is not ready, and a request that
    // would sign is 503 with Retry-After, nothing issued.
    const readiness = await eventually(
      async () => {
        const res = await api().get('/api/v1/readiness');
        return res.status === 503 && res.body.checks.receiptKey.ok === false ? res.body : undefined;
      },
      15_000,
      250,
    );
    expect(readiness.checks.receiptKey).toEqual({
      ok: false,
      detail: `ed25519 key ${B.keyId} is revoked from ${T}: set SERVICE_SIGNING_KEY to the new key`,
    });
    const licenses = await licenseCount();
    const refusedTrial = await api()
      .post('/api/v1/commercial/checkout/prepare')
      .send({
        license: 'TRIAL',
        organization: 'After Revocation',
        email: 'ops@example.test',
        ...(await trialProof(api())),
      });
    expect(refusedTrial.status, JSON.stringify(refusedTrial.body)).toBe(503);
    expect(refusedTrial.body.code).toBe('signing_key_retired');
    expect(refusedTrial.headers['retry-after']).toBe('5');
    expect(await licenseCount()).toBe(licenses);
  }, 180_000);
});
