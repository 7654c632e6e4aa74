// The public pages in a real browser with JavaScript off: home, the verify form, and every verdict a
// reader can meet — verified, not verified, in progress, cannot tell, not found — plus an auction page
// and Bull Board. Each page is screenshotted (.cache/screenshots/) and read back as text; no page may
// load anything from another origin, and nothing private may appear.
import { existsSync, mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { closeDeps, depsFromEnv } from '../../api/main';
import { drive, evidence, prepare, testProver, waitForPackage } from './e2e/helpers';
import type { Body, TestProver } from './e2e/helpers';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const SHOTS = '.cache/screenshots';
const OPERATOR_TOKEN = 'op_test_token_0123456789';
const secrets = ['Grant applicant: Dr. Ada Example, ID 998877', 'Panel scoring sheet: 7/9/8'];

const deps = depsFromEnv();
let server: Server;
let base: string;
let browser: Browser;
let context: BrowserContext;
let prover: TestProver;
let done: { workflowId: string; proofId: string; package: Body };
let active: { workflowId: string; proofId: string };
/** Every URL any page asked for, to prove nothing came from elsewhere. */
const requested: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: install it (apt-get install -y chromium) to run the browser tests.`,
    );
  }
  mkdirSync(SHOTS, { recursive: true });
  server = createApp(deps).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  prover = testProver();
  const request = supertest(base);
  const ids = await prepare(request, 'Grant Review');
  await drive(request, ids.workflowId, 'Grant Review', { secrets });
  done = { ...ids, package: (await waitForPackage(request, ids.proofId)).package };
  active = await prepare(request, 'Vendor Onboarding');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
  context = await browser.newContext({
    javaScriptEnabled: false,
    viewport: { width: 1100, height: 800 },
    colorScheme: 'light',
  });
  context.on('request', (r) => requested.push(r.url()));
});
afterAll(async () => {
  await browser?.close();
  await prover?.close();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  await closeDeps(deps);
});

async function shot(page: Page, name: string) {
  await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
}

const verdictOf = (page: Page) => page.locator('#verdict').getAttribute('data-verdict');
const mainText = (page: Page) => page.locator('main').innerText();

/** The page looks like the others: the shared stylesheet applied, a link home. */
async function expectFrame(page: Page) {
  expect(await page.locator('header a.brand').getAttribute('href')).toBe('/');
  const font = String(await page.evaluate('getComputedStyle(document.body).fontFamily'));
  expect(font).toContain('system-ui');
}

async function pastePackage(page: Page, text: string) {
  await page.goto(`${base}/proof-workflows/verify/`);
  await page.fill('#package', text);
  await Promise.all([page.waitForLoadState('load'), page.click('#by-package button')]);
}

describe('public pages in a browser, without JavaScript', () => {
  it('home links to the verify page and the docs', async () => {
    const page = await context.newPage();
    await page.goto(`${base}/`);
    await expectFrame(page);
    expect(await page.locator('h1').innerText()).toBe('proof-exchange');
    expect(await page.locator('a.card[href="/proof-workflows/verify/"]').count()).toBe(1);
    expect(await page.locator('a.card[href="/docs"]').count()).toBe(1);
    await shot(page, 'home');
    await page.close();
  });

  it('the form shows the id format; a wrong id is refused with the format again', async () => {
    const page = await context.newPage();
    await page.goto(`${base}/proof-workflows/verify/`);
    expect(await page.title()).toBe('Verify a proof');
    await expectFrame(page);
    expect(await page.locator('#proofId-hint').innerText()).toMatch(
      /prf_ followed by 26 letters and digits, for example prf_[0-9a-z]{26}/,
    );
    await shot(page, 'verify-form');
    // The browser's own pattern check is skipped here, as a client without it would send.
    await page.goto(`${base}/proof-workflows/verify/?proofId=prf_123`);
    expect(await page.locator('.error').innerText()).toContain(
      'a proof id is prf_ followed by 26 letters and digits',
    );
    expect(await page.inputValue('#proofId')).toBe('prf_123');
    await shot(page, 'verify-form-bad-id');
    await page.close();
  });

  it('verified: a proof id through the form to a result led by its verdict', async () => {
    const page = await context.newPage();
    await page.goto(`${base}/proof-workflows/verify/`);
    await page.fill('#proofId', done.proofId);
    await Promise.all([
      page.waitForURL(`**/proof-workflows/verify/${done.proofId}/`),
      page.click('#by-id button'),
    ]);
    await expectFrame(page);
    expect(await verdictOf(page)).toBe('verified');
    expect(await page.locator('#verdict .label').innerText()).toContain('Verified');
    for (const fact of ['existed', 'completed', 'approvalsMet', 'sequenceRespected', 'notAltered']) {
      expect(await page.locator(`td[data-fact="${fact}"]`).innerText(), fact).toContain('yes');
    }
    expect(await page.locator('tr[data-stage]').count()).toBe(5);
    expect(await page.locator('tr[data-stage="panel_review"] td').nth(1).innerText()).toContain(
      '3 approvals',
    );
    expect(await page.locator('#chain-head').innerText()).toMatch(/^[0-9a-f]{64}$/);
    const text = await mainText(page);
    expect(text).toContain('Signed by key');
    expect(text).toContain('Included as leaf');
    const html = await page.content();
    for (const s of [...secrets, ...secrets.map(evidence), done.workflowId]) expect(html).not.toContain(s);
    await shot(page, 'verified');
    await page.close();
  });

  it('at a phone’s width (390 px) nothing is clipped: the page does not overflow, wide tables scroll in place', async () => {
    const phone = await browser.newContext({
      javaScriptEnabled: false,
      viewport: { width: 390, height: 844 },
      colorScheme: 'light',
    });
    try {
      const page = await phone.newPage();
      await page.goto(`${base}/proof-workflows/verify/${done.proofId}/`);
      expect(await verdictOf(page)).toBe('verified');
      // In the page (a string: this project's TypeScript has no DOM types).
      const layout = (await page.evaluate(`(() => {
        const tables = [...document.querySelectorAll('main table')].map((t) => {
          const r = t.getBoundingClientRect();
          const wrap = t.closest('.table-wrap');
          return {
            id: t.id || (t.querySelector('th') || {}).textContent || '?',
            fits: r.right <= window.innerWidth + 0.5,
            scrolls: wrap ? getComputedStyle(wrap).overflowX === 'auto' && wrap.clientWidth <= window.innerWidth : false,
          };
        });
        return { page: document.documentElement.scrollWidth, width: window.innerWidth, tables };
      })()`)) as {
        page: number;
        width: number;
        tables: Array<{ id: string; fits: boolean; scrolls: boolean }>;
      };
      expect(layout.page, 'the page itself scrolls sideways').toBeLessThanOrEqual(layout.width);
      for (const t of layout.tables) expect(t.fits || t.scrolls, `table ${t.id}`).toBe(true);
      // The stage timeline is all there: every stage, reachable by scrolling its own box.
      expect(await page.locator('tr[data-stage]').count()).toBe(5);
      await shot(page, 'verified-390');
    } finally {
      await phone.close();
    }
  });

  it('in progress: a workflow that has not completed is not called verified or failed', async () => {
    const page = await context.newPage();
    await page.goto(`${base}/proof-workflows/verify/${active.proofId}/`);
    expect(await verdictOf(page)).toBe('in-progress');
    expect(await page.locator('#verdict').innerText()).toContain('has not completed yet');
    expect(await page.locator('td[data-fact="completed"]').innerText()).toBe('not yet');
    expect(await page.locator('.no').count()).toBe(0);
    expect(await page.content()).not.toContain(active.workflowId);
    await shot(page, 'in-progress');
    await page.close();
  });

  it('not verified: a tampered package posted through the plain form says which checks failed', async () => {
    const page = await context.newPage();
    const tampered = structuredClone(done.package) as { stages: Array<{ status: string }> };
    tampered.stages[0]!.status = 'rejected';
    await pastePackage(page, JSON.stringify(tampered));
    expect(await verdictOf(page)).toBe('not-verified');
    expect(await page.locator('#verdict .label').innerText()).toContain('Not verified');
    expect(await page.locator('td[data-fact="notAltered"]').innerText()).toContain('no');
    expect(await page.locator('ul.reasons li').count()).toBeGreaterThan(0);
    await shot(page, 'not-verified');
    await page.close();
  });

  it('cannot tell: a pasted non-package gets no table of failed checks', async () => {
    const page = await context.newPage();
    await pastePackage(page, JSON.stringify({ hello: 'world' }));
    expect(await verdictOf(page)).toBe('cannot-tell');
    const text = await mainText(page);
    expect(text).toContain('Cannot tell');
    expect(text).toContain('says nothing, good or bad');
    expect(await page.locator('#facts').count()).toBe(0);
    expect(await page.locator('.no').count()).toBe(0);
    await shot(page, 'cannot-tell');
    await page.close();
  });

  it('not found: an unknown id is a 404 with the form to try again', async () => {
    const page = await context.newPage();
    const res = await page.goto(`${base}/proof-workflows/verify/prf_01jd3zzzzzzzzzzzzzzzzzzzzz/`);
    expect(res?.status()).toBe(404);
    expect(await page.locator('h1').innerText()).toBe('Proof not found');
    expect(await verdictOf(page)).toBe('not-found');
    expect(await page.locator('#by-id').count()).toBe(1);
    await expectFrame(page);
    await shot(page, 'not-found');
    await page.close();
  });

  it('an auction page shares the frame and shows only status and time while bidding', async () => {
    const created = await supertest(base)
      .post('/api/auctions')
      .set('Authorization', `Bearer ${OPERATOR_TOKEN}`)
      .send({
        title: 'Lot 7',
        asset: 'USDC-SOL',
        pricing: 'second',
        biddingEndsAt: new Date(Date.now() + 3_600_000).toISOString(),
        revealEndsAt: new Date(Date.now() + 7_200_000).toISOString(),
      })
      .expect(201);
    const page = await context.newPage();
    await page.goto(`${base}/auctions/${created.body.auctionId}/`);
    await expectFrame(page);
    expect(await page.locator('#live').innerText()).toContain('Time remaining');
    await shot(page, 'auction-bidding');
    await page.goto(`${base}/governance/proposals/prop_01jd3zzzzzzzzzzzzzzzzzzzzz/`);
    expect(await page.locator('h1').innerText()).toBe('Proposal not found');
    await expectFrame(page);
    await page.close();
  });

  it('Bull Board renders with the system fonts and asks nothing of another origin', async () => {
    const board = await browser.newContext({
      httpCredentials: { username: 'operator', password: OPERATOR_TOKEN },
      viewport: { width: 1100, height: 700 },
    });
    board.on('request', (r) => requested.push(r.url()));
    const page = await board.newPage();
    const res = await page.goto(`${base}/admin/queues`);
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-security-policy']).toContain("default-src 'self'");
    await page.waitForSelector('text=jobs', { timeout: 15_000 });
    expect(await page.content()).not.toContain('fonts.googleapis.com');
    await shot(page, 'bull-board');
    await board.close();
  });

  it('no page loaded anything from another origin', () => {
    expect(requested.length).toBeGreaterThan(10);
    expect(requested.filter((u) => !u.startsWith(`${base}/`))).toEqual([]);
  });
});
