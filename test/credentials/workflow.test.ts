// Credential proofs as a stage's evidence, over HTTP against the real Postgres and the committed circuit:
// an Underwriting workflow prepared for a bureau's credit report takes a proof of `score ≥ X` and
// `debtToIncome ≤ Y` by an issuer the organization accepts, and refuses, writing nothing, every way
// of claiming what the bureau never said; the package carries the proof and the facts it rests on,
// and the offline check refuses each of them changed. The proof verifies with snarkjs's CLI and the
// served key.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CredentialDocument } from '../../shared/credentials/format';
import {
  emptyRevocations,
  issueCredential,
  issuerPublication,
  newIssuerKey,
  revoke,
} from '../../shared/credentials/issuer';
import type { IssuerKeyFile, Revocations } from '../../shared/credentials/issuer';
import { revocationPath } from '../../shared/credentials/query';
import { creditReportSchema } from '../../shared/credentials/schemas';
import { checkCredentialProofs } from '../../shared/workflows/credential-proofs';
import type { PackagedCredentialProof } from '../../shared/workflows/credential-proofs';
import { findTemplate } from '../../shared/workflows/templates';
import { stageContext } from '../../shared/zk/context';
import { provePolicy, terminateCurves } from '../../shared/zk';
import { localProverBackend } from '../../shared/zk/local-prover';
import { loadVerificationKey } from '../../shared/zk/verify';
import { eventually, testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { OPERATOR, actor, evidence, testProver } from '../workflows/e2e/helpers';
import type { TestProver } from '../workflows/e2e/helpers';
import type { IssuerPin } from '../../shared/credentials/registry';
import { CREDENTIAL_PUBLIC_SIGNALS } from '../../shared/credentials/query';

const exec = promisify(execFile);
const underwriting = findTemplate('Underwriting')!;
const RISK = underwriting.stages.findIndex((s) => s.key === 'risk_assessment');
const X = 700;
const Y = 3600;

let app: TestApp;
let prover: TestProver;
let bureau: IssuerKeyFile;
let state: Revocations;
const dir = mkdtempSync(join(tmpdir(), 'px-credential-'));

const post = (path: string, body: object) => app.request.post(path).set('Authorization', OPERATOR).send(body);
const subjectOf = () =>
  String(BigInt(`0x${Buffer.from(crypto.getRandomValues(new Uint8Array(31))).toString('hex')}`));

async function publish(key: IssuerKeyFile, revocations: Revocations, at = new Date()) {
  return issuerPublication(key, revocations, [creditReportSchema], at);
}

async function report(
  key: IssuerKeyFile,
  subject: string,
  fields: Partial<{ score: number; debtToIncome: number }> = {},
  times: { validFrom?: string; validUntil?: string } = {},
): Promise<CredentialDocument> {
  return issueCredential(key, {
    schema: creditReportSchema,
    subject,
    validFrom: times.validFrom ?? new Date(Date.now() - 60_000).toISOString(),
    validUntil: times.validUntil ?? '2030-01-01T00:00:00Z',
    fields: { score: 742, debtToIncome: 3100, reportedAt: '2026-11-30', bureau: 'other', ...fields },
  });
}

interface Prepared {
  workflowId: string;
  proofId: string;
  salts: Record<string, string>;
}

async function prepare(subject: string, opts: { plain?: boolean } = {}): Promise<Prepared> {
  const res = await post('/api/proof-workflows/prepare', {
    template: 'Underwriting',
    policyParameters: {
      risk_assessment: {
        credential: {
          subject,
          parameters: { score: { value: X }, debtToIncome: { value: Y } },
          ...(opts.plain ? { plain: true } : {}),
        },
      },
    },
  });
  expect(res.status, res.text).toBe(201);
  const gate = (
    res.body.policyGates as Array<{ stage: string; policy: string; salts: Record<string, string> }>
  ).find((g) => g.stage === 'risk_assessment')!;
  expect(gate.policy).toBe('credential');
  const wf = {
    workflowId: res.body.workflowId as string,
    proofId: res.body.proofId as string,
    salts: gate.salts,
  };
  for (const [stage, action, ev] of [
    ['application', 'attach_evidence', 'application form'],
    ['application', 'submit', undefined],
    ['document_review', 'attach_evidence', 'documents'],
    ['document_review', 'approve', undefined],
  ] as const) {
    const r = await post('/api/proof-workflows/event', {
      workflowId: wf.workflowId,
      stage,
      action,
      actorCommitment: actor(`${stage}-${action}`),
      ...(ev ? { evidenceHash: evidence(ev) } : {}),
    });
    expect(r.status, r.text).toBe(200);
  }
  return wf;
}

/** A proof on the holder's side, as `px workflow credential` makes it. */
async function prove(
  wf: Prepared,
  credential: CredentialDocument,
  opts: {
    nonces?: string[];
    query?: Array<{ field: string; op: 'gte' | 'lte'; value: number; salt: string }>;
    at?: Prepared;
  } = {},
) {
  const query = opts.query ?? [
    { field: 'score', op: 'gte' as const, value: X, salt: wf.salts.scoreSalt! },
    { field: 'debtToIncome', op: 'lte' as const, value: Y, salt: wf.salts.debtToIncomeSalt! },
  ];
  const revocation = await revocationPath(
    opts.nonces ?? state.revoked.map((r) => r.nonce),
    credential.credentialStatus.revocationNonce,
  );
  const proved = await provePolicy(
    await localProverBackend(),
    'credential',
    { credential, query, revocation },
    undefined,
    {
      context: BigInt(await stageContext((opts.at ?? wf).proofId, RISK)),
    },
  );
  return { policy: 'credential', proof: proved.proof, publicSignals: proved.publicSignals };
}

const entries = async (wf: Prepared) =>
  Number((await app.deps.db('audit_entries').where('workflow_id', wf.workflowId).count({ n: '*' }))[0]!.n);

async function attach(wf: Prepared, policyProof: unknown) {
  return post('/api/proof-workflows/event', {
    workflowId: wf.workflowId,
    stage: 'risk_assessment',
    action: 'attach_evidence',
    actorCommitment: actor('underwriter'),
    policyProof,
  });
}

/** The approvals after the credential proof, then the package once built: the public verify answer. */
async function finish(wf: Prepared) {
  for (const [stage, n] of [
    ['risk_assessment', 1],
    ['approval', 2],
  ] as const)
    for (let i = 0; i < n; i++)
      expect(
        (
          await post('/api/proof-workflows/event', {
            workflowId: wf.workflowId,
            stage,
            action: 'approve',
            actorCommitment: actor(`${stage}-${i}`),
          })
        ).status,
      ).toBe(200);
  return eventually(
    async () => {
      const v = await app.request
        .post('/api/proof-workflows/verify')
        .send({ proofId: wf.proofId })
        .expect(200);
      return v.body.package ? v.body : undefined;
    },
    60_000,
    200,
  );
}

/** Refused with this code, and nothing written. */
async function refused(wf: Prepared, policyProof: unknown, status: number, code: string) {
  const before = await entries(wf);
  const res = await attach(wf, policyProof);
  expect(res.status, res.text).toBe(status);
  expect(res.body.code).toBe(code);
  expect(await entries(wf)).toBe(before);
}

beforeAll(async () => {
  app = testApp();
  prover = testProver();
  bureau = await newIssuerKey('Acme Credit Bureau');
  state = emptyRevocations(bureau.keyId);
  const res = await post('/api/proof-workflows/issuers', { publication: await publish(bureau, state) });
  expect(res.status, res.text).toBe(201);
  expect(res.body.issuer).toMatchObject({ keyId: bureau.keyId, name: 'Acme Credit Bureau', version: 1 });
}, 60_000);

afterAll(async () => {
  await prover.close();
  await app.close();
  await terminateCurves();
  rmSync(dir, { recursive: true, force: true });
});

describe('a stage prepared for a credit report', () => {
  let accepted: {
    wf: Prepared;
    proof: Awaited<ReturnType<typeof prove>>;
    packaged?: PackagedCredentialProof;
    trail?: unknown[];
  };

  it('takes a proof by an accepted bureau, and the package carries it, checked offline; snarkjs verifies it with the served key', async () => {
    const subject = subjectOf();
    const wf = await prepare(subject);
    const proof = await prove(wf, await report(bureau, subject));
    const res = await attach(wf, proof);
    expect(res.status, res.text).toBe(200);
    expect(res.body.policyProof).toMatchObject({ policy: 'credential', verified: true });
    accepted = { wf, proof };

    // The proof, as published, verifies with the stock CLI and the key the service serves.
    const vkey = await app.request.get('/circuits/credential.vkey.json').expect(200);
    writeFileSync(join(dir, 'vkey.json'), vkey.text);
    writeFileSync(join(dir, 'public.json'), JSON.stringify(proof.publicSignals));
    writeFileSync(join(dir, 'proof.json'), JSON.stringify(proof.proof));
    const cli = await exec(process.execPath, [
      'node_modules/snarkjs/build/cli.cjs',
      'groth16',
      'verify',
      join(dir, 'vkey.json'),
      join(dir, 'public.json'),
      join(dir, 'proof.json'),
    ]);
    expect(cli.stdout).toContain('OK!');

    // The rest of the workflow, then its package.
    const verdict = await finish(wf);
    expect(verdict.credentials).toEqual([
      expect.objectContaining({
        stage: 'risk_assessment',
        proven: true,
        what: 'a credit report',
        issuer: expect.objectContaining({ name: 'Acme Credit Bureau', keyId: bureau.keyId }),
        terms: ['score ≥ a value the organization fixed', 'debtToIncome ≤ a value the organization fixed'],
        subject,
        reasons: [],
      }),
    ]);
    const packaged = verdict.package.credentialProofs as PackagedCredentialProof[];
    expect(packaged).toHaveLength(1);
    accepted.packaged = packaged[0];
    accepted.trail = verdict.package.auditTrail;
    expect(verdict.package.log.statements).toHaveLength(2);

    // Offline: each fact changed is refused by name.
    const vk = await loadVerificationKey('credential');
    const check = (p: PackagedCredentialProof, issuers?: IssuerPin[]) =>
      checkCredentialProofs({
        proofId: wf.proofId,
        trail: verdict.package.auditTrail,
        proofs: [p],
        template: underwriting,
        vkey: vk,
        issuers,
      });
    expect((await check(packaged[0]!)).allProven).toBe(true);
    const changed = (f: (p: PackagedCredentialProof) => void) => {
      const p = JSON.parse(JSON.stringify(packaged[0])) as PackagedCredentialProof;
      f(p);
      return p;
    };
    const reasonsOf = async (p: PackagedCredentialProof, issuers?: IssuerPin[]) => {
      const v = await check(p, issuers);
      expect(v.allProven).toBe(false);
      return v.credentials[0]!.reasons.join('\n');
    };
    expect(
      await reasonsOf(
        changed(
          (p) => (p.issuer.statement.revokedFrom = new Date(Date.now() - 86_400_000 * 30).toISOString()),
        ),
      ),
    ).toContain('revoked or outside its validity');
    expect(await reasonsOf(packaged[0]!, [{ keyId: '0'.repeat(64) }])).toContain(
      'not in your list of issuers',
    );
    // Pinned as a trust root lists it: for its organization, with its period and revocation.
    const { keyId, owner } = packaged[0]!.issuer.statement;
    expect((await check(packaged[0]!, [{ keyId, acceptedBy: owner }])).allProven).toBe(true);
    expect(await reasonsOf(packaged[0]!, [{ keyId, acceptedBy: 'lic_another' }])).toContain(
      'not in your list of issuers for this organization',
    );
    // A newer root the issuer had published by the proof's time: the trust root's roots show it offline.
    const used = packaged[0]!.revocation.statement;
    const proofTime = Number(packaged[0]!.publicSignals[CREDENTIAL_PUBLIC_SIGNALS.indexOf('now')]);
    const earlier = new Date(proofTime * 1000).toISOString();
    expect(
      await reasonsOf(packaged[0]!, [
        {
          keyId,
          acceptedBy: owner,
          roots: [
            { seq: used.seq, root: used.root, publishedAt: used.publishedAt },
            { seq: used.seq + 1, root: '7', publishedAt: earlier },
          ],
        },
      ]),
    ).toContain(`newer revocation root (${used.seq + 1}, at ${earlier})`);
    const later = new Date(Date.now() + 86_400_000).toISOString();
    expect(
      (
        await check(packaged[0]!, [
          { keyId, acceptedBy: owner, roots: [{ seq: used.seq + 1, root: '7', publishedAt: later }] },
        ])
      ).allProven,
    ).toBe(true);
    // A revocation the bundle predates still counts: the pinned trust root says so.
    const revokedFrom = new Date(Date.now() - 86_400_000 * 30).toISOString();
    expect(await reasonsOf(packaged[0]!, [{ keyId, acceptedBy: owner, revokedFrom }])).toContain(
      `your trust root has the issuer key revoked from ${revokedFrom}`,
    );
    expect(
      (
        await check(packaged[0]!, [
          { keyId, acceptedBy: owner, revokedFrom: new Date(Date.now() + 86_400_000).toISOString() },
        ])
      ).allProven,
    ).toBe(true);
    expect(
      await reasonsOf(changed((p) => (p.requirement.terms = p.requirement.terms.slice(0, 1)))),
    ).toContain('requirement differs');
    expect(
      await reasonsOf(changed((p) => (p.publicSignals[6] = String(Number(p.publicSignals[6]) + 1)))),
    ).toContain('not the evidence of the entry');
    expect(await reasonsOf(changed((p) => (p.revocation.statement.root = '1')))).toContain(
      'revocation root is not the statement',
    );
    expect(
      await reasonsOf(changed((p) => (p.revocation.statement.publishedAt = '2020-01-01T00:00:00.000Z'))),
    ).toContain('older than the requirement allows');
    expect(await reasonsOf(changed((p) => (p.stageIndex = 1)))).toContain('takes no credential proof');
  }, 180_000);

  it('publishes the parameters in plain where the organization chose to: the page says them, a changed one is refused offline', async () => {
    const subject = subjectOf();
    // A salt beside a plain parameter is refused, with nothing written.
    const workflows = Number((await app.deps.db('workflows').count({ n: '*' }))[0]!.n);
    const salted = await post('/api/proof-workflows/prepare', {
      template: 'Underwriting',
      policyParameters: {
        risk_assessment: {
          credential: {
            subject,
            plain: true,
            parameters: { score: { value: X, salt: '5' }, debtToIncome: { value: Y } },
          },
        },
      },
    });
    expect(salted.status, salted.text).toBe(400);
    expect(salted.body.errors[0].path).toBe(
      'policyParameters.risk_assessment.credential.parameters.score.salt',
    );
    expect(Number((await app.deps.db('workflows').count({ n: '*' }))[0]!.n)).toBe(workflows);

    const wf = await prepare(subject, { plain: true });
    expect(wf.salts).toEqual({ scoreSalt: '0', debtToIncomeSalt: '0' });
    expect((await attach(wf, await prove(wf, await report(bureau, subject)))).status).toBe(200);
    const verdict = await finish(wf);
    expect(verdict.credentials[0]).toMatchObject({
      proven: true,
      terms: [`score ≥ ${X}`, `debtToIncome ≤ ${Y}`],
    });
    const packaged = (verdict.package.credentialProofs as PackagedCredentialProof[])[0]!;
    expect(packaged.requirement.terms.map((t) => t.parameters)).toEqual([{ value: X }, { value: Y }]);
    const page = await app.request.get(`/proof-workflows/verify/${wf.proofId}/`).expect(200);
    expect(page.text).toContain(`score ≥ ${X}`);

    // Offline: the published cut-offs must be the proof's own.
    const vk = await loadVerificationKey('credential');
    const check = (p: PackagedCredentialProof) =>
      checkCredentialProofs({
        proofId: wf.proofId,
        trail: verdict.package.auditTrail,
        proofs: [p],
        template: underwriting,
        vkey: vk,
      });
    expect((await check(packaged)).allProven).toBe(true);
    const stricter = JSON.parse(JSON.stringify(packaged)) as PackagedCredentialProof;
    stricter.requirement.terms[0]!.parameters = { value: X + 50 };
    const refusedStricter = await check(stricter);
    expect(refusedStricter.allProven).toBe(false);
    expect(refusedStricter.credentials[0]!.reasons).toContain(
      'the plain parameter of score is not the one the proof was made for',
    );
    expect(refusedStricter.credentials[0]!.terms[0]).toBe(`score ≥ ${X + 50}`);
    // Nor can a committed package claim a cut-off in plain: its commitment is salted.
    const claimed = JSON.parse(JSON.stringify(accepted.packaged)) as PackagedCredentialProof;
    claimed.requirement.terms[0]!.parameters = { value: X };
    claimed.requirement.terms[1]!.parameters = { value: Y };
    const refusedClaim = await checkCredentialProofs({
      proofId: accepted.wf.proofId,
      trail: accepted.trail as never,
      proofs: [claimed],
      template: underwriting,
      vkey: vk,
    });
    expect(refusedClaim.credentials[0]!.reasons).toEqual([
      'the plain parameter of score is not the one the proof was made for',
    ]);
  }, 180_000);

  it('refuses a bureau the organization does not accept', async () => {
    const subject = subjectOf();
    const wf = await prepare(subject);
    const other = await newIssuerKey('Unknown Bureau');
    await refused(
      wf,
      await prove(wf, await report(other, subject), { nonces: [] }),
      409,
      'credential_issuer_not_accepted',
    );
  }, 60_000);

  it('refuses a credential about another applicant, a weaker query, and a proof made for another workflow or used twice', async () => {
    const subject = subjectOf();
    const wf = await prepare(subject);
    await refused(wf, await prove(wf, await report(bureau, subjectOf())), 409, 'policy_parameters_mismatch');
    const weaker = await prove(wf, await report(bureau, subject), {
      query: [{ field: 'score', op: 'gte', value: X, salt: wf.salts.scoreSalt! }],
    });
    await refused(wf, weaker, 409, 'policy_parameters_mismatch');
    // The accepted proof of the first workflow, replayed here: its context and subject are another's.
    await refused(wf, accepted.proof, 409, 'policy_parameters_mismatch');
    const forOther = await prove(wf, await report(bureau, subject), { at: accepted.wf });
    await refused(wf, forOther, 409, 'policy_proof_wrong_context');
    const proof = await prove(wf, await report(bureau, subject));
    expect((await attach(wf, proof)).status).toBe(200);
    await refused(wf, proof, 409, 'policy_proof_reused');
  }, 120_000);

  it('refuses, before proving, an altered field, an expired credential and a revoked one', async () => {
    const subject = subjectOf();
    const wf = await prepare(subject);
    const altered = await report(bureau, subject);
    (altered.credentialSubject as Record<string, unknown>).score = 800;
    await expect(prove(wf, altered)).rejects.toMatchObject({ status: 400 });
    const expired = await report(
      bureau,
      subject,
      {},
      { validFrom: '2025-01-01T00:00:00Z', validUntil: '2025-06-01T00:00:00Z' },
    );
    await expect(prove(wf, expired)).rejects.toMatchObject({ status: 422, code: 'credential_expired' });
    const revoked = await report(bureau, subject);
    const before = state.revoked.map((r) => r.nonce);
    state = revoke(state, revoked.credentialStatus.revocationNonce, new Date());
    const logged = await post(`/api/proof-workflows/issuers/${bureau.keyId}/revocations`, {
      publication: await publish(bureau, state),
    });
    expect(logged.status, logged.text).toBe(201);
    await expect(prove(wf, revoked)).rejects.toMatchObject({ status: 422, code: 'credential_revoked' });
    // A proof's time is whole seconds: one made the second after the new root is past it.
    await new Promise((r) => setTimeout(r, 1100));
    // Against the root from before the revocation: the gate knows a newer one was out by the proof's time.
    await refused(wf, await prove(wf, revoked, { nonces: before }), 409, 'revocation_root_superseded');
    // A root the log never recorded.
    await refused(
      wf,
      await prove(wf, await report(bureau, subject), { nonces: ['12345'] }),
      409,
      'revocation_root_unknown',
    );
  }, 120_000);

  it('refuses an issuer key revoked from a time before the proof, and a root older than the bound', async () => {
    const subject = subjectOf();
    const wf = await prepare(subject);
    const stale = await newIssuerKey('Slow Bureau');
    const old = await publish(stale, emptyRevocations(stale.keyId), new Date(Date.now() - 8 * 86_400_000));
    expect(
      (await post('/api/proof-workflows/issuers', { publication: old, validFrom: '2026-01-01T00:00:00Z' }))
        .status,
    ).toBe(201);
    await refused(
      wf,
      await prove(wf, await report(stale, subject), { nonces: [] }),
      409,
      'revocation_root_stale',
    );

    const compromised = await newIssuerKey('Compromised Bureau');
    expect(
      (
        await post('/api/proof-workflows/issuers', {
          publication: await publish(compromised, emptyRevocations(compromised.keyId)),
        })
      ).status,
    ).toBe(201);
    const credential = await report(compromised, subject);
    const revokedKey = await post(`/api/proof-workflows/issuers/${compromised.keyId}/revoke`, {
      from: new Date(Date.now() - 30_000).toISOString(),
    });
    expect(revokedKey.status, revokedKey.text).toBe(200);
    expect(revokedKey.body.version).toBe(2);
    await refused(wf, await prove(wf, credential, { nonces: [] }), 409, 'credential_issuer_revoked');

    // The trust root lists each issuer for the organization that accepts it: its period, its
    // revocation from a time, and every root it published, which a verifier checks offline.
    const root = (await app.request.get('/api/proof-workflows/trust-root').expect(200)).body;
    const listed = (keyId: string) =>
      (root.issuers as Array<Record<string, unknown>>).find((i) => i.keyId === keyId);
    expect(listed(compromised.keyId)).toMatchObject({
      name: 'Compromised Bureau',
      revokedFrom: revokedKey.body.revokedFrom,
      version: 2,
      revocationRoots: [expect.objectContaining({ seq: 1 })],
    });
    expect(listed(stale.keyId)).toMatchObject({ validFrom: '2026-01-01T00:00:00.000Z' });
    expect(listed(bureau.keyId)).toMatchObject({ name: 'Acme Credit Bureau' });
    expect(listed(bureau.keyId)!.acceptedBy).toEqual(listed(stale.keyId)!.acceptedBy);
    expect(listed(bureau.keyId)!.revokedFrom).toBeUndefined();
  }, 120_000);

  it('refuses an issuer publication that does not hold, and one older than the last', async () => {
    const pub = await publish(bureau, state);
    const forged = { ...pub, name: 'Someone Else' };
    const res = await post('/api/proof-workflows/issuers', { publication: forged });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('invalid_issuer_publication');
    const older = await publish(bureau, state, new Date(Date.now() - 3_600_000));
    const stale = await post(`/api/proof-workflows/issuers/${bureau.keyId}/revocations`, {
      publication: older,
    });
    expect(stale.status).toBe(409);
    expect(stale.body.code).toBe('revocation_root_stale');
    const unauthenticated = await app.request.post('/api/proof-workflows/issuers').send({ publication: pub });
    expect(unauthenticated.status).toBe(401);
    // What a prover needs is public: the latest root and its nonces.
    const latest = await app.request
      .get(`/api/proof-workflows/issuers/${bureau.keyId}/revocations`)
      .expect(200);
    expect(latest.body.nonces).toEqual(state.revoked.map((r) => r.nonce));
  });
});
