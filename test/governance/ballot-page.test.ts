// The voting page in a real browser: paste an identity, choose, and the page proves membership with
// snarkjs and encrypts the vote with WebCrypto, on this side; the service takes the ballot, and what it
// stored opens (with the proposal key) to the choice and carries the identity's nullifier — made by the
// browser from a secret the service never saw. The voting and trustee pages do all of it under their
// own Content-Security-Policy (nonced scripts, WebAssembly only where snarkjs proves) with nothing refused.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { closeDeps, depsFromEnv } from '../../api/main';
import { createIdentity } from '../../shared/governance/ballot-client';
import type { Identity } from '../../shared/governance/ballot-client';
import { decryptVote, nullifierOf, proposalScope } from '../../shared/governance/ballot-protocol';
import { reviewMessage } from '../../shared/governance/commitments';
import { proposalBallotKey } from '../../shared/governance/ballot-key';
import {
  ballotEphemeral,
  combinePartials,
  openThresholdVote,
  partialDecrypt,
} from '../../shared/governance/threshold';
import {
  ceremonyRound,
  decryptVote as trusteeDecrypt,
  fetchCeremony,
  newTrusteeFile,
  secretShareOf,
  trusteePublicKeys,
} from '../../shared/governance/trustee-client';
import { terminateCurves } from '../../shared/zk';
import { watchPolicy } from '../security/page-policy';
import { OPERATOR, ballotInfo, captureLogs, makeBallotBody, until, wallet } from './helpers';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
];
const CHOICE = 'fund-the-library-3e1f';

const deps = depsFromEnv();
const reviewer = wallet();
let server: Server;
let base: string;
let browser: Browser;
let logs: ReturnType<typeof captureLogs>;
let proposalId: string;
let me: Identity;

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`Chromium is not installed at ${CHROMIUM}: install it (apt-get install -y chromium).`);
  logs = captureLogs();
  server = createApp(deps).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const request = supertest(base);
  const roomId = (
    await request
      .post('/api/governance/rooms')
      .set('Authorization', OPERATOR)
      .send({ name: 'Library board', members: [reviewer.address] })
      .expect(201)
  ).body.roomId as string;
  await request
    .post(`/api/governance/rooms/${roomId}/committees`)
    .set('Authorization', OPERATOR)
    .send({ slug: 'review', name: 'Review', members: [reviewer.address], threshold: 1 })
    .expect(201);
  me = await createIdentity();
  const others = [await createIdentity(), await createIdentity()];
  await request
    .post(`/api/governance/rooms/${roomId}/identities`)
    .set('Authorization', OPERATOR)
    .send({ identityCommitments: [others[0]!.commitment, me.commitment, others[1]!.commitment] })
    .expect(200);
  proposalId = (
    await request
      .post('/api/governance/proposals')
      .set('Authorization', OPERATOR)
      .send({
        roomId,
        title: 'Budget',
        options: [CHOICE, 'keep-2b9c'],
        reviewCommittee: 'review',
        votingSeconds: 600,
      })
      .expect(201)
  ).body.proposalId as string;
  await request
    .post(`/api/governance/proposals/${proposalId}/review`)
    .send({
      walletPublicKey: reviewer.address,
      decision: 'approve',
      signature: reviewer.sign(reviewMessage(proposalId, 'approve')),
    })
    .expect(200);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
});
afterAll(async () => {
  logs?.stop();
  await browser?.close();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  await closeDeps(deps);
  await terminateCurves();
});

/** A room with the reviewer's committee, one voter's identity and two trustees appointed (2 of 2). */
async function trusteeRoom(name: string) {
  const request = supertest(base);
  const roomId = (
    await request
      .post('/api/governance/rooms')
      .set('Authorization', OPERATOR)
      .send({ name, members: [reviewer.address] })
      .expect(201)
  ).body.roomId as string;
  await request
    .post(`/api/governance/rooms/${roomId}/committees`)
    .set('Authorization', OPERATOR)
    .send({ slug: 'review', name: 'Review', members: [reviewer.address], threshold: 1 })
    .expect(201);
  const voter = await createIdentity();
  await request
    .post(`/api/governance/rooms/${roomId}/identities`)
    .set('Authorization', OPERATOR)
    .send({ identityCommitments: [voter.commitment] })
    .expect(200);
  const files = [newTrusteeFile(), newTrusteeFile()];
  await request
    .post(`/api/governance/rooms/${roomId}/trustees`)
    .set('Authorization', OPERATOR)
    .send({ threshold: 2, trustees: files.map((f, i) => ({ name: `T${i + 1}`, ...trusteePublicKeys(f) })) })
    .expect(201);
  return { roomId, voter, files };
}

/** A proposal of the room, in review: voting opens for `votingSeconds` once the reviewer approves. */
async function propose(roomId: string, title: string, votingSeconds: number): Promise<string> {
  return (
    await supertest(base)
      .post('/api/governance/proposals')
      .set('Authorization', OPERATOR)
      .send({ roomId, title, options: [CHOICE, 'keep-2b9c'], reviewCommittee: 'review', votingSeconds })
      .expect(201)
  ).body.proposalId as string;
}

async function approve(id: string): Promise<void> {
  await supertest(base)
    .post(`/api/governance/proposals/${id}/review`)
    .send({
      walletPublicKey: reviewer.address,
      decision: 'approve',
      signature: reviewer.sign(reviewMessage(id, 'approve')),
    })
    .expect(200);
}

/** A proposal of the room, reviewed by the reviewer: voting is open for `votingSeconds`. */
async function openProposal(roomId: string, title: string, votingSeconds: number): Promise<string> {
  const id = await propose(roomId, title, votingSeconds);
  await approve(id);
  return id;
}

describe('the voting page in a browser', () => {
  it('proves and encrypts in the page, and the service keeps only what the voter sent', async () => {
    const page = await browser.newPage();
    const policy = await watchPolicy(page);
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(`${base}/governance/proposals/${proposalId}/`);
    expect(await page.locator('[data-status="voting"]').count()).toBe(1);
    // The identity file, as the voter picks it: read in the page, its secret never shown.
    const identityFile = join(mkdtempSync(join(tmpdir(), 'px-ballot-page-')), 'my-identity.json');
    writeFileSync(identityFile, JSON.stringify(me));
    await page.setInputFiles('#identity-file', identityFile);
    await page.check(`input[name="choice"][value="${CHOICE}"]`);
    await page.click('#vote-form button');
    await page
      .locator('#vote-status')
      .filter({ hasText: /Cast\.|Not cast/ })
      .waitFor({ timeout: 150_000 });
    expect(await page.locator('#vote-status').innerText(), errors.join('\n')).toMatch(/^Cast\./);
    const receipt = JSON.parse(await page.locator('#receipt').innerText()) as { type: string };
    expect(receipt.type).toBe('proof-exchange/ballot-receipt/v2');
    expect(await page.content()).not.toContain(me.secret);
    // The receipt downloads as a file, the same receipt.
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#receipt-download')]);
    expect(download.suggestedFilename()).toBe(`ballot-receipt-${proposalId}.json`);
    expect(JSON.parse(readFileSync(await download.path(), 'utf8'))).toEqual(receipt);
    // The command line hint names this service, not a placeholder.
    expect(await page.content()).toContain(`npm run ballot -- vote --url ${base} --proposal ${proposalId}`);

    const rows = (await deps.db('ballots').where('proposal_id', proposalId)) as Array<{
      nullifier: string;
      ciphertext: Buffer;
    }>;
    expect(rows).toHaveLength(1);
    expect(rows[0]!.nullifier).toBe(String(await nullifierOf(me.secret, proposalScope(proposalId))));
    const p = await deps.db('proposals').where('id', proposalId).first();
    expect(decryptVote(proposalBallotKey(proposalId, p.key_wrapped), proposalId, rows[0]!.ciphertext)).toBe(
      CHOICE,
    );
    // The secret went nowhere: not to a table, not to a log line.
    expect(JSON.stringify(rows)).not.toContain(me.secret);
    expect(logs.lines.join('\n')).not.toContain(me.secret);

    // Voting again from the page is refused: one ballot per identity.
    await page.check('input[name="choice"][value="keep-2b9c"]');
    await page.click('#vote-form button');
    await page
      .locator('#vote-status')
      .filter({ hasText: /Not cast/ })
      .waitFor({ timeout: 150_000 });
    expect(await page.locator('#vote-status').innerText()).toContain('already_voted');
    expect(await deps.db('ballots').where('proposal_id', proposalId)).toHaveLength(1);
    // Nothing the page needed was refused by its policy.
    expect(policy.violations).toEqual([]);
  }, 320_000);

  it('under the trustees’ key, encrypts to their joint key in the page: only both trustees together open it', async () => {
    const { roomId, voter, files } = await trusteeRoom('Trustee board');
    for (let round = 0; round < 2; round++)
      for (const [i, f] of files.entries()) files[i] = (await ceremonyRound(base, roomId, f)).file;
    const ceremony = await fetchCeremony(base, roomId);
    expect(ceremony.status).toBe('ready');
    const id = await openProposal(roomId, 'Trust', 600);

    const page = await browser.newPage();
    const policy = await watchPolicy(page);
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(`${base}/governance/proposals/${id}/`);
    expect(await page.locator('#trustee-note').innerText()).toContain('T1, T2');
    // Pasted instead of picked: cleared from the page once read.
    await page.click('#identity-paste summary');
    await page.fill('#identity', JSON.stringify(voter));
    await page.check(`input[name="choice"][value="${CHOICE}"]`);
    await page.click('#vote-form button');
    await page
      .locator('#vote-status')
      .filter({ hasText: /Cast\.|Not cast/ })
      .waitFor({ timeout: 150_000 });
    expect(await page.locator('#vote-status').innerText(), errors.join('\n')).toMatch(/^Cast\./);
    expect(errors).toEqual([]);
    expect(await page.inputValue('#identity')).toBe('');
    expect(await page.content()).not.toContain(voter.secret);

    const [row] = (await deps.db('ballots').where('proposal_id', id)) as Array<{ ciphertext: Buffer }>;
    const R = ballotEphemeral(row!.ciphertext, id);
    expect(R, 'the page proved knowledge of r for this proposal').not.toBeNull();
    const partials = files.map((f) => {
      const { index, share } = secretShareOf(ceremony, f);
      return { index, share: partialDecrypt(share, index, id, R!).share };
    });
    expect(openThresholdVote(combinePartials(partials), ceremony.jointKey!, id, row!.ciphertext)).toBe(
      CHOICE,
    );
    expect(
      openThresholdVote(combinePartials(partials.slice(0, 1)), ceremony.jointKey!, id, row!.ciphertext),
    ).toBeNull();
    // Nothing the page needed was refused by its policy.
    expect(policy.violations).toEqual([]);
  }, 320_000);
  it('the trustee page: one trustee deals, judges and decrypts in the browser, the other with the CLI client', async () => {
    const request = supertest(base);
    const { roomId, voter, files } = await trusteeRoom('Browser trustees');

    const page = await browser.newPage();
    const policy = await watchPolicy(page);
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const status = () => page.locator('#trustee-status').filter({ hasText: /^(Done\.|Not done)/ });
    const press = async (button: string) => {
      await page.locator('#trustee-status').evaluate((el) => (el.textContent = ''));
      await page.click(button);
      await status().waitFor({ timeout: 60_000 });
      expect(await page.locator('#trustee-status').innerText(), errors.join('\n')).toBe('Done.');
      return JSON.parse(await page.locator('#trustee-out').innerText()) as Record<string, unknown>;
    };
    await page.goto(`${base}/governance/trustee/`);
    await page.fill('#trustee-file', JSON.stringify(files[0]));
    await page.fill('#room', roomId);
    expect((await press('#ceremony')).did).toContain('dealt');
    files[1] = (await ceremonyRound(base, roomId, files[1]!)).file; // T2 deals and judges both
    expect(await press('#ceremony')).toMatchObject({ status: 'ready' }); // T1 judges T2's dealing
    // The page kept what T1 dealt in the file it shows, for the trustee to save.
    const saved = JSON.parse(await page.locator('#trustee-file').inputValue()) as {
      dealt: Record<string, string[]>;
    };
    expect(saved.dealt[roomId]).toHaveLength(2);
    expect((await fetchCeremony(base, roomId)).status).toBe('ready');

    // The ballot is made before the vote opens: on a loaded machine proving can take longer than the
    // three seconds the vote is open.
    const id = await propose(roomId, 'Browser', 3);
    const ballot = await makeBallotBody(await ballotInfo(request as never, id), voter, CHOICE);
    await approve(id);
    await request.post(`/api/governance/proposals/${id}/ballots`).send(ballot).expect(201);
    // Before the close the page refuses to decrypt.
    await page.fill('#proposal', id);
    await page.locator('#trustee-status').evaluate((el) => (el.textContent = ''));
    await page.click('#decrypt');
    await status().waitFor({ timeout: 60_000 });
    expect(await page.locator('#trustee-status').innerText()).toMatch(/^Not done: Nothing to decrypt now/);
    await until(new Date(Date.now() + 3500));
    expect((await request.get(`/api/governance/proposals/${id}`).expect(200)).body.status).toBe('decrypting');
    expect(await press('#decrypt')).toMatchObject({ trusteesDecrypted: 1, trusteesNeeded: 2 });
    await trusteeDecrypt(base, id, files[1]!);
    const closed = (await request.get(`/api/governance/proposals/${id}`).expect(200)).body;
    expect(closed).toMatchObject({ status: 'closed', winner: CHOICE, countedCount: 1 });
    expect(errors).toEqual([]);
    // Nothing the page needed was refused by its policy.
    expect(policy.violations).toEqual([]);
  }, 320_000);
});
