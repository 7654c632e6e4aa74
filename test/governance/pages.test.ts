// The public pages as a voter and an auditor meet them, in Chromium with JavaScript on: a proposal in
// review says when voting opens; the voting page lists the options, loads the shared stylesheet under
// its own policy (no violation reported) and counts down; a choice that is none of the options is
// refused by the CLI before any proving; a spoiled ballot is counted as spoiled in the state, the
// package, the page and the receipt check; the verify page takes a prf_ id of every kind and a pasted
// package, shows the kind, and never calls an insecure setup verified; /governance/ and /auctions/ list
// what is public. Every state is screenshotted into this run's temp folder.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { closeDeps, depsFromEnv } from '../../api/main';
import type { Ballot, BallotInfo, Identity } from '../../shared/governance/ballot-client';
import { reviewMessage } from '../../shared/governance/commitments';
import { insecureSetup } from '../../shared/zk/setup';
import { terminateCurves } from '../../shared/zk';
import { prepare } from '../workflows/e2e/helpers';
import { OPERATOR, addIdentities, ballotInfo, makeBallotBody, until, wallet } from './helpers';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
];
const OPTIONS = ['Yes', 'No'];
const SPOILED = 'Yes '; // one trailing space: not an option
const VOTING_SECONDS = 12;

const deps = depsFromEnv();
const reviewer = wallet();
const shots = mkdtempSync(join(tmpdir(), 'px-pages-'));
let server: Server;
let base: string;
let request: ReturnType<typeof supertest>;
let browser: Browser;
let context: BrowserContext;
let roomId: string;
let voting: string; // the proposal that is voted on
let inReview: string; // one that stays in review
let voters: Identity[];
let info: BallotInfo;
let auction: { auctionId: string; revealEndsAt: string };
const ballots: Ballot[] = [];
/** Each ballot's signed receipt, by its ciphertext, as its voter keeps it. */
const receipts = new Map<string, Record<string, unknown>>();
/** Console errors of every page (a CSP violation is one), by page. */
const consoleErrors: string[] = [];

async function propose(title: string): Promise<string> {
  return (
    await request
      .post('/api/governance/proposals')
      .set('Authorization', OPERATOR)
      .send({ roomId, title, options: OPTIONS, reviewCommittee: 'review', votingSeconds: VOTING_SECONDS })
      .expect(201)
  ).body.proposalId as string;
}

async function open(path: string, name: string): Promise<Page> {
  const page = await context.newPage();
  page.on('console', (m) => {
    // A 404 page's own status is reported too; everything else (a CSP violation first) counts.
    if (m.type() === 'error' && !/^Failed to load resource: .* 404/.test(m.text()))
      consoleErrors.push(`${path}: ${m.text()}`);
  });
  page.on('pageerror', (e) => consoleErrors.push(`${path}: ${e.message}`));
  const res = await page.goto(`${base}${path}`);
  expect(res?.status(), path).toBeLessThan(500);
  await expectStyled(page, path);
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  return page;
}

/** The shared stylesheet applied (its fonts and header), and nothing refused by the page's policy. */
async function expectStyled(page: Page, path: string) {
  expect(String(await page.evaluate('getComputedStyle(document.body).fontFamily')), path).toContain(
    'system-ui',
  );
  expect(
    await page.evaluate('getComputedStyle(document.querySelector(".site-header")).borderBottomStyle'),
    path,
  ).toBe('solid');
  expect(consoleErrors.filter((e) => e.startsWith(`${path}:`))).toEqual([]);
}

const verdict = (page: Page) => page.locator('#verdict').getAttribute('data-verdict');
const kind = (page: Page) => page.locator('#kind').getAttribute('data-kind');
/** The sign the stylesheet puts before the verdict's label (✓ for verified only). */
const marker = (page: Page) =>
  page.evaluate('getComputedStyle(document.querySelector("#verdict .label"), "::before").content');

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`Chromium is not installed at ${CHROMIUM}: install it (apt-get install -y chromium).`);
  server = createApp(deps).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  request = supertest(base);
  roomId = (
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
  voters = await addIdentities(request, roomId, 3);
  voting = await propose('Open the library on Sundays?');
  inReview = await propose('Buy a second printer?');
  // Ballots made before the vote opens, so the window is spent casting. The test's own client has no
  // options to check against, which is how a spoiled ballot can be made at all.
  info = await ballotInfo(request, voting);
  for (const [i, choice] of ['Yes', 'No', SPOILED].entries())
    ballots.push(await makeBallotBody(info, voters[i]!, choice));
  // A public auction (no room) whose windows pass during the file, with no bids: finalized on a read.
  const now = Date.now();
  auction = (
    await request
      .post('/api/auctions')
      .set('Authorization', OPERATOR)
      .send({
        title: 'Lot 12: a reading lamp',
        asset: 'USDC-SOL',
        pricing: 'second',
        biddingEndsAt: new Date(now + 1500).toISOString(),
        revealEndsAt: new Date(now + 2500).toISOString(),
      })
      .expect(201)
  ).body;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
  context = await browser.newContext({ viewport: { width: 1100, height: 800 }, colorScheme: 'light' });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  await closeDeps(deps);
  await terminateCurves();
  rmSync(shots, { recursive: true, force: true });
});

describe('governance for people', () => {
  it('in review: the question, its options, and when voting opens', async () => {
    const state = (await request.get(`/api/governance/proposals/${inReview}`).expect(200)).body;
    expect(state).toMatchObject({
      status: 'review',
      options: OPTIONS,
      reviewThreshold: 1,
      votingSeconds: VOTING_SECONDS,
    });
    const page = await open(`/governance/proposals/${inReview}/`, 'review');
    expect(await page.locator('[data-status="review"]').count()).toBe(1);
    expect(await page.locator('#options li').allInnerTexts()).toEqual(OPTIONS);
    expect(await page.locator('#next').innerText()).toBe(
      `Voting opens when 1 member of the review committee approves; it then runs for ${VOTING_SECONDS} s. Reload this page then to vote.`,
    );
    await page.close();
  });

  it('the CLI refuses a choice that is none of the options, before proving, and nothing is sent', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'px-voter-'));
    try {
      writeFileSync(join(dir, 'me.json'), JSON.stringify(voters[0]));
      const key = (await request.get(`/api/governance/proposals/${voting}/ballot-key`).expect(200)).body;
      expect(key.options).toEqual(OPTIONS);
      // Asynchronously: the service answering the CLI runs in this process.
      const run = await promisify(execFile)(
        process.execPath,
        [
          '--import',
          'tsx',
          'cli/ballot.ts',
          'vote',
          '--proposal',
          voting,
          '--identity',
          join(dir, 'me.json'),
          '--choice',
          SPOILED,
          // A folder that does not exist: reaching the prover would fail with another message.
          '--artifacts',
          join(dir, 'no-artifacts'),
        ],
        { env: { ...process.env, VITEST: '', PX_URL: base }, encoding: 'utf8', timeout: 60_000 },
      ).then(
        () => ({ code: 0, stderr: '' }),
        (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }),
      );
      expect(run.code).toBe(1);
      expect(run.stderr.trim()).toBe(
        `"Yes " is not one of this proposal's options ("Yes", "No"); a ballot with it would be counted as spoiled, so none was made.`,
      );
      expect(await deps.db('ballots').where('proposal_id', voting)).toHaveLength(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it('voting: options to pick from, styled under its own policy, the time remaining counting down', async () => {
    await request
      .post(`/api/governance/proposals/${voting}/review`)
      .send({
        walletPublicKey: reviewer.address,
        decision: 'approve',
        signature: reviewer.sign(reviewMessage(voting, 'approve')),
      })
      .expect(200);
    const res = await request.get(`/governance/proposals/${voting}/`).expect(200);
    const csp = res.headers['content-security-policy'] as string;
    expect(csp).toMatch(/style-src 'self'(;|$)/);
    expect(csp).not.toMatch(/style-src[^;]*unsafe-inline/);
    const page = await open(`/governance/proposals/${voting}/`, 'voting');
    expect(await page.locator('[data-status="voting"]').count()).toBe(1);
    expect(await page.locator('#question').innerText()).toBe('Open the library on Sundays?');
    expect(await page.locator('#options li').allInnerTexts()).toEqual(OPTIONS);
    expect(await page.locator('#vote-form input[type="radio"][name="choice"]').count()).toBe(2);
    expect(await page.locator('#vote-form input[type="text"]').count()).toBe(0);
    // The links of the header stand apart, not run together.
    const boxes = await page
      .locator('.site-header nav a')
      .evaluateAll((links) => links.map((a) => a.getBoundingClientRect()).map((r) => [r.left, r.right]));
    expect(boxes.length).toBeGreaterThan(2);
    for (let i = 1; i < boxes.length; i++) expect(boxes[i]![0]! - boxes[i - 1]![1]!).toBeGreaterThan(8);
    // The countdown moves in the browser.
    const first = await page.locator('#time-remaining').innerText();
    const deadline = Date.now() + 5_000;
    while ((await page.locator('#time-remaining').innerText()) === first) {
      expect(Date.now(), 'the time remaining did not move').toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await page.locator('#next').innerText()).toContain('When the time runs out the vote closes');
    await page.close();

    for (const b of ballots) {
      const cast = await request.post(`/api/governance/proposals/${voting}/ballots`).send(b).expect(201);
      receipts.set(b.ciphertext, cast.body as Record<string, unknown>);
    }
  }, 90_000);

  it('closed: four numbers that agree — state, package, page and the spoiled voter’s receipt check', async () => {
    const { votingEndsAt } = (await request.get(`/api/governance/proposals/${voting}`).expect(200)).body;
    await until(votingEndsAt, 200);
    const state = (await request.get(`/api/governance/proposals/${voting}`).expect(200)).body;
    expect(state).toMatchObject({
      status: 'closed',
      ballotCount: 3,
      countedCount: 2,
      spoiledCount: 1,
      tally: { Yes: 1, No: 1 },
      outcome: 'tie',
    });
    const pkg = (await request.get(`/api/governance/proposals/${voting}/package`).expect(200)).body;
    expect(pkg.ballots).toHaveLength(3);
    expect(pkg.ballots.filter((b: { choice: string | null }) => b.choice === null)).toHaveLength(1);
    expect(pkg.tally).toMatchObject({ total: 2, spoiled: 1 });

    const page = await open(`/governance/proposals/${voting}/`, 'tally');
    expect(await page.locator('#ballot-counts').innerText()).toBe('3 ballots: 2 counted, 1 spoiled');
    // One row per option and one for the spoiled, each a label and a number in the same columns.
    const rows = await page
      .locator('#tally tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) => [...tr.children].map((c) => [c.tagName, Math.round(c.getBoundingClientRect().left)])),
      );
    expect(rows).toHaveLength(3);
    for (const r of rows)
      expect(r.map(([tag, left]) => `${tag}@${left}`)).toEqual(
        rows[0]!.map(([tag, left]) => `${tag}@${left}`),
      );
    expect(await page.locator('#tally td[data-option="spoiled"]').innerText()).toBe('1');
    expect(await page.locator('#ballots-heading').innerText()).toBe('Ballots (3)');
    expect(await page.locator('#ballots tbody tr').count()).toBe(3);
    expect(await page.locator('#next').innerText()).toContain('The vote is closed');
    await page.close();

    // The voter of the spoiled ballot is told why, not only that it does not match.
    const check = (
      await request
        .post('/api/governance/verify')
        .send({ package: pkg, receipt: receipts.get(ballots[2]!.ciphertext), opening: { choice: SPOILED } })
        .expect(200)
    ).body;
    expect(check.receipt).toMatchObject({
      included: true,
      spoiled: true,
      note: 'spoiled: choice not among the options',
      ballotMatches: false,
    });
  }, 90_000);
});

describe('one verify page for every proof, and the index pages', () => {
  it('a governance tally by its id: the kind, and an insecure setup as a warning, never verified', async () => {
    const { tallyProofId } = (await request.get(`/api/governance/proposals/${voting}`).expect(200)).body;
    const page = await open(`/proof-workflows/verify/${tallyProofId}/`, 'verify-governance');
    expect(await kind(page)).toBe('governance');
    expect(await page.locator(`a[href="/governance/proposals/${voting}/"]`).count()).toBe(1);
    // This checkout's circuit keys come from the development powers of tau: the ballots' proofs could
    // be forged, so the page warns instead of saying verified.
    expect(insecureSetup()).toBe(true);
    expect(await verdict(page)).toBe('insecure');
    expect(await page.locator('#verdict .label').innerText()).toBe(
      'Checks hold, but under an insecure setup',
    );
    expect(await marker(page)).toBe('"⚠ "');
    expect(await page.locator('.verdict.verified').count()).toBe(0);
    await page.close();
  });

  it('a pasted governance package and a pasted blind policy proof: each shows its kind', async () => {
    const pkg = (await request.get(`/api/governance/proposals/${voting}/package`).expect(200)).body;
    const page = await open('/proof-workflows/verify/', 'verify-form');
    await page.fill('#package', JSON.stringify(pkg));
    await Promise.all([page.waitForLoadState('load'), page.click('#by-package button')]);
    await expectStyled(page, '/proof-workflows/verify/');
    expect(await kind(page)).toBe('governance');
    expect(await verdict(page)).toBe('insecure');
    await page.screenshot({ path: join(shots, 'verify-governance-pasted.png'), fullPage: true });
    // A changed tally fails, and says so.
    const changed = structuredClone(pkg);
    changed.tally.counts.Yes = 2;
    await page.goto(`${base}/proof-workflows/verify/`);
    await page.fill('#package', JSON.stringify(changed));
    await Promise.all([page.waitForLoadState('load'), page.click('#by-package button')]);
    expect(await verdict(page)).toBe('not-verified');
    expect(await page.locator('ul.reasons li').count()).toBeGreaterThan(0);
    await page.screenshot({ path: join(shots, 'verify-governance-changed.png'), fullPage: true });

    await page.goto(`${base}/proof-workflows/verify/`);
    await page.fill(
      '#package',
      JSON.stringify({ policy: 'threshold', proof: { pi_a: ['1'] }, publicSignals: ['1', '2'] }),
    );
    await Promise.all([page.waitForLoadState('load'), page.click('#by-package button')]);
    expect(await kind(page)).toBe('blind-policy');
    expect(await verdict(page)).toBe('not-verified');
    await page.screenshot({ path: join(shots, 'verify-blind-policy.png'), fullPage: true });
    await page.close();
  });

  it('a workflow and an auction by their ids; an unknown id is not found for any kind', async () => {
    const wf = await prepare(request, 'Vendor Onboarding');
    const page = await open(`/proof-workflows/verify/${wf.proofId}/`, 'verify-workflow');
    expect(await kind(page)).toBe('workflow');
    expect(await verdict(page)).toBe('in-progress');
    await page.close();

    await until(auction.revealEndsAt, 100);
    const finalized = (await request.get(`/api/auctions/${auction.auctionId}`).expect(200)).body;
    expect(finalized.status).toBe('finalized');
    const a = await open(`/proof-workflows/verify/${finalized.result.proofId}/`, 'verify-auction');
    expect(await kind(a)).toBe('auction');
    expect(await verdict(a)).toBe('verified');
    expect(await a.locator('#verdict .label').innerText()).toBe('Verified');
    expect(await marker(a)).toBe('"✓ "');
    expect(await a.locator(`a[href="/auctions/${auction.auctionId}/"]`).count()).toBe(1);
    await a.close();

    // A blind policy proof is its holder's: by its id, the kind and how to verify it, nothing more.
    const inputs = { value: '7391402581', threshold: '6173051947' };
    const held = await request
      .post('/api/proof-workflows/blind-policy/prove')
      .send({ policy: 'threshold', inputs, hold: true })
      .expect(202);
    const bp = await open(`/proof-workflows/verify/${held.body.proof.id}/`, 'verify-blind-policy-by-id');
    expect(await kind(bp)).toBe('blind-policy');
    expect(await verdict(bp)).toBe('not-public');
    const html = await bp.content();
    for (const v of [...Object.values(inputs), ...Object.values(held.body.commitments as object)])
      expect(html).not.toContain(String(v));
    await bp.close();

    // The same lookup as an API: the kind and where to verify it.
    const asked = await request.get(`/api/proofs/${finalized.result.proofId}`).expect(200);
    expect(asked.body).toEqual({
      proofId: finalized.result.proofId,
      kind: 'auction',
      verifyPage: `/proof-workflows/verify/${finalized.result.proofId}/`,
      page: `/auctions/${auction.auctionId}/`,
    });
    expect((await request.get(`/api/proofs/${wf.proofId}`).expect(200)).body.kind).toBe('workflow');
    expect((await request.get('/api/proofs/prf_01jd3zzzzzzzzzzzzzzzzzzzzz').expect(404)).body.code).toBe(
      'not_found',
    );
    const unknown = await open('/proof-workflows/verify/prf_01jd3zzzzzzzzzzzzzzzzzzzzz/', 'verify-not-found');
    expect(await verdict(unknown)).toBe('not-found');
    expect(await unknown.locator('#verdict').innerText()).toContain('No proof of any kind has the id');
    await unknown.close();
  });

  it('/governance/ and /auctions/ list what is public, and home links both', async () => {
    const home = await open('/', 'home');
    expect(await home.locator('a.card[href="/governance/"]').count()).toBe(1);
    expect(await home.locator('a.card[href="/auctions/"]').count()).toBe(1);
    await home.close();

    const gov = await open('/governance/', 'governance-index');
    expect(await gov.locator('h1').innerText()).toBe('Governance');
    expect(
      await gov.locator(`tr[data-proposal="${voting}"] a[href="/governance/proposals/${voting}/"]`).count(),
    ).toBe(1);
    // A proposal still in review is not announced.
    expect(await gov.locator(`tr[data-proposal="${inReview}"]`).count()).toBe(0);
    await gov.close();

    const auctions = await open('/auctions/', 'auctions-index');
    expect(
      await auctions
        .locator(`tr[data-auction="${auction.auctionId}"] a[href="/auctions/${auction.auctionId}/"]`)
        .count(),
    ).toBe(1);
    await auctions.close();

    const icon = await request.get('/favicon.ico').expect(200);
    expect(icon.headers['content-type']).toContain('image/svg+xml');
  });
});
