// Every HTML page the service serves, under its Content-Security-Policy: each route sends a strict
// policy (no 'unsafe-inline', no eval, nothing framed, no plugins, no <base>); the voting and trustee
// pages run only scripts that carry a nonce made fresh for each response; /docs runs swagger-ui's own
// files and allows its inline styles by hash. In Chromium every page renders and works with nothing
// refused, and a script injected into the trustee page, the voting page or /docs does not run: what a
// trustee or a voter pastes is never sent anywhere.
import { existsSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { closeDeps, depsFromEnv } from '../../api/main';
import { sha256Source } from '../../api/pages/csp';
import { reviewMessage } from '../../shared/governance/commitments';
import { newTrusteeFile } from '../../shared/governance/trustee-client';
import { OPERATOR, addIdentities, wallet } from '../governance/helpers';
import { prepare } from '../workflows/e2e/helpers';
import { directives, watchPolicy } from './page-policy';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
];
const UNKNOWN_PROOF = 'prf_01jd3zzzzzzzzzzzzzzzzzzzzz';
const UNKNOWN_PROPOSAL = 'prop_01jd3zzzzzzzzzzzzzzzzzzzzz';

const deps = depsFromEnv();
const reviewer = wallet();
let server: Server;
let base: string;
let request: ReturnType<typeof supertest>;
let browser: Browser;
let context: BrowserContext;
let voting: string;
let inReview: string;
let auctionId: string;
let workflowProofId: string;
/** Every path the service was asked for, by anyone: what an injected script sent would be here. */
const received: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`Chromium is not installed at ${CHROMIUM}: install it (apt-get install -y chromium).`);
  server = createApp(deps).listen(0, '127.0.0.1');
  server.on('request', (req: { url?: string }) => received.push(req.url ?? ''));
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  request = supertest(base);
  const roomId = (
    await request
      .post('/api/governance/rooms')
      .set('Authorization', OPERATOR)
      .send({ name: 'Policy board', members: [reviewer.address] })
      .expect(201)
  ).body.roomId as string;
  await request
    .post(`/api/governance/rooms/${roomId}/committees`)
    .set('Authorization', OPERATOR)
    .send({ slug: 'review', name: 'Review', members: [reviewer.address], threshold: 1 })
    .expect(201);
  await addIdentities(request, roomId, 1);
  const propose = async (title: string) =>
    (
      await request
        .post('/api/governance/proposals')
        .set('Authorization', OPERATOR)
        .send({ roomId, title, options: ['Yes', 'No'], reviewCommittee: 'review', votingSeconds: 3600 })
        .expect(201)
    ).body.proposalId as string;
  voting = await propose('Paint the hall?');
  inReview = await propose('Move the hall?');
  await request
    .post(`/api/governance/proposals/${voting}/review`)
    .send({
      walletPublicKey: reviewer.address,
      decision: 'approve',
      signature: reviewer.sign(reviewMessage(voting, 'approve')),
    })
    .expect(200);
  auctionId = (
    await request
      .post('/api/auctions')
      .set('Authorization', OPERATOR)
      .send({
        title: 'Lot 3: a bench',
        asset: 'USDC-SOL',
        pricing: 'second',
        biddingEndsAt: new Date(Date.now() + 3_600_000).toISOString(),
        revealEndsAt: new Date(Date.now() + 7_200_000).toISOString(),
      })
      .expect(201)
  ).body.auctionId as string;
  workflowProofId = (await prepare(request, 'Vendor Onboarding')).proofId;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
  context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  await closeDeps(deps);
});

/** Every server-rendered page a visitor can reach without scripts, each state and error page once. */
const plainPages = (): string[] => [
  '/',
  '/proof-workflows/verify/',
  '/proof-workflows/verify/?proofId=not-an-id',
  `/proof-workflows/verify/${workflowProofId}/`,
  `/proof-workflows/verify/${UNKNOWN_PROOF}/`,
  '/governance/',
  `/governance/proposals/${inReview}/`,
  `/governance/proposals/${UNKNOWN_PROPOSAL}/`,
  '/governance/proposals/not-a-proposal/',
  '/auctions/',
  `/auctions/${auctionId}/`,
  '/auctions/not-an-auction/',
];
const scriptPages = (): string[] => [`/governance/proposals/${voting}/`, '/governance/trustee/'];
/** The verify form's posts answer with pages too: a broken paste, and a paste that is no package. */
const posted: Array<[string, string]> = [
  ['not json', 'package=%7Bnot%20json'],
  ['no package', `package=${encodeURIComponent('{"hello":"world"}')}`],
];

const policyOf = (res: { headers: Record<string, string> }): Map<string, string[]> => {
  const csp = res.headers['content-security-policy'];
  expect(csp, 'Content-Security-Policy').toBeTypeOf('string');
  return directives(csp!);
};
const nonceOf = (policy: Map<string, string[]>): string | undefined =>
  policy
    .get('script-src')
    ?.find((s) => s.startsWith("'nonce-"))
    ?.slice("'nonce-".length, -1);
const scriptTags = (html: string): string[] => [...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);

/** What every page's policy must say, whatever else it allows. */
function expectStrict(policy: Map<string, string[]>, where: string) {
  expect(policy.get('default-src'), where).toEqual(["'none'"]);
  expect(policy.get('object-src'), where).toEqual(["'none'"]);
  expect(policy.get('base-uri'), where).toEqual(["'none'"]);
  expect(policy.get('frame-ancestors'), where).toEqual(["'none'"]);
  expect(policy.get('form-action'), where).toEqual(["'self'"]);
  const script = policy.get('script-src');
  expect(script, `${where}: script-src`).toBeDefined();
  for (const bad of [
    "'unsafe-inline'",
    "'unsafe-eval'",
    "'unsafe-hashes'",
    '*',
    'data:',
    'blob:',
    'http:',
    'https:',
  ])
    expect(script, `${where}: script-src`).not.toContain(bad);
  for (const name of ['style-src', 'style-src-elem', 'style-src-attr'])
    expect(policy.get(name) ?? [], `${where}: ${name}`).not.toContain("'unsafe-inline'");
  // Nothing of another origin, in any directive.
  for (const [name, sources] of policy)
    for (const s of sources) expect(s, `${where}: ${name}`).toMatch(/^('[^']+'|data:)$/);
}

describe('every page sends a strict Content-Security-Policy', () => {
  it('pages without scripts: script-src none, and not one script element', async () => {
    for (const path of plainPages()) {
      const res = await request.get(path);
      expect(res.headers['content-type'], path).toMatch(/^text\/html/);
      const policy = policyOf(res);
      expectStrict(policy, path);
      expect(policy.get('script-src'), path).toEqual(["'none'"]);
      expect(policy.get('style-src'), path).toEqual(["'self'"]);
      expect(scriptTags(res.text), path).toEqual([]);
      expect(res.text, path).not.toMatch(/\sstyle=/);
    }
    for (const [what, body] of posted) {
      const res = await request.post('/proof-workflows/verify/').type('form').send(body);
      expect(res.headers['content-type'], what).toMatch(/^text\/html/);
      expectStrict(policyOf(res), `POST /proof-workflows/verify/ (${what})`);
      expect(policyOf(res).get('script-src')).toEqual(["'none'"]);
    }
  });

  it('the voting and trustee pages: a fresh 128-bit nonce per response, carried by every script they send', async () => {
    for (const path of scriptPages()) {
      const [a, b] = [await request.get(path).expect(200), await request.get(path).expect(200)];
      const [pa, pb] = [policyOf(a), policyOf(b)];
      expectStrict(pa, path);
      const [na, nb] = [nonceOf(pa), nonceOf(pb)];
      expect(na, path).toBeDefined();
      expect(Buffer.from(na!, 'base64')).toHaveLength(16);
      expect(na, `${path}: the nonce is not reused`).not.toBe(nb);
      // The nonce and, on the voting page only, WebAssembly compilation (snarkjs): nothing else runs.
      const wasm = path === '/governance/trustee/' ? [] : ["'wasm-unsafe-eval'"];
      expect(pa.get('script-src')).toEqual([`'nonce-${na}'`, ...wasm]);
      expect(pa.get('connect-src')).toEqual(["'self'"]);
      const tags = scriptTags(a.text);
      expect(tags.length, path).toBeGreaterThan(0);
      for (const tag of tags) expect(tag, path).toContain(` nonce="${na}"`);
      expect(a.text).not.toContain(nb);
      expect(a.text, path).not.toMatch(/\sstyle=|\son[a-z]+=/);
    }
  });

  it('/docs: swagger-ui’s own files, and each inline style by the hash of its text', async () => {
    await request.get('/docs').expect(301).expect('Location', '/docs/');
    const res = await request.get('/docs/').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    const policy = policyOf(res);
    expectStrict(policy, '/docs/');
    expect(policy.get('script-src')).toEqual(["'self'"]);
    for (const tag of scriptTags(res.text)) expect(tag).toMatch(/\ssrc=/);
    const styles = [...res.text.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => sha256Source(m[1]!));
    expect(styles.length).toBeGreaterThan(0);
    // The page's own <style> elements, and the one swagger-ui's topbar logo renders (an SVG's).
    expect(policy.get('style-src-elem')).toEqual([
      "'self'",
      ...new Set(styles),
      sha256Source('.logo_small_svg__cls-2{fill:#fff}.logo_small_svg__cls-3{fill:#85ea2d}'),
    ]);
    // No badge of the online validator: an image of another origin, sent the document's address.
    expect((await request.get('/docs/swagger-ui-init.js').expect(200)).text).toContain(
      '"validatorUrl": null',
    );
    const attributes = [...res.text.matchAll(/\sstyle="([^"]*)"/g)].map((m) => sha256Source(m[1]!));
    expect(policy.get('style-src-attr')).toEqual(["'unsafe-hashes'", ...new Set(attributes)]);
  });

  it('anything that is not a page (JSON, a problem, a redirect, a file) may run, load and frame nothing', async () => {
    const redirect = `/proof-workflows/verify/?proofId=${UNKNOWN_PROOF}`;
    await request.get(redirect).expect(303);
    for (const path of [
      '/api/health',
      '/no-such-page',
      '/openapi.json',
      redirect,
      '/circuits/snarkjs.min.js',
    ]) {
      const policy = policyOf(await request.get(path));
      expect(policy.get('default-src'), path).toEqual(["'none'"]);
      expect(policy.get('frame-ancestors'), path).toEqual(["'none'"]);
    }
  });
});

/** A page opened in Chromium with its policy watched, the shared stylesheet applied where it is ours. */
async function open(path: string): Promise<{ page: Page; violations: string[] }> {
  const page = await context.newPage();
  const { violations } = await watchPolicy(page);
  const res = await page.goto(`${base}${path}`);
  expect(res?.status(), path).toBeLessThan(500);
  return { page, violations };
}

const bodyFont = (page: Page) => page.evaluate('getComputedStyle(document.body).fontFamily');
const typeOf = (page: Page, name: string) => page.evaluate(`typeof window.${name}`);

describe('every page works under its policy in Chromium, and nothing is refused', () => {
  it('the pages without scripts render with the shared stylesheet', async () => {
    // One tab for all of them: the watch stays on across navigations, and names each page it reports.
    const page = await context.newPage();
    const { violations } = await watchPolicy(page);
    for (const path of plainPages()) {
      const res = await page.goto(`${base}${path}`);
      expect(res?.status(), path).toBeLessThan(500);
      expect(await bodyFont(page), path).toContain('system-ui');
    }
    expect(violations).toEqual([]);
    await page.close();
  });

  it('the voting page runs its script and loads snarkjs', async () => {
    const { page, violations } = await open(`/governance/proposals/${voting}/`);
    expect(await bodyFont(page)).toContain('system-ui');
    expect(await typeOf(page, 'snarkjs')).toBe('object');
    // The form's handler runs (it is the page's nonced script): an identity that is not JSON is refused.
    await page.click('#identity-paste summary');
    await page.fill('#identity', 'not json');
    await page.check('input[name="choice"][value="Yes"]');
    await page.click('#vote-form button');
    await page
      .locator('#vote-status')
      .filter({ hasText: /^Not cast/ })
      .waitFor();
    expect(violations).toEqual([]);
    await page.close();
  });

  it('the trustee page runs its module, with @noble/curves imported through the import map', async () => {
    const { page, violations } = await open('/governance/trustee/');
    await page.fill('#trustee-file', JSON.stringify(newTrusteeFile()));
    await page.fill('#room', 'room_01jd3zzzzzzzzzzzzzzzzzzzzz');
    await page.click('#ceremony');
    // Keys derived in the page (ed25519, x25519 from the imported modules), then the room asked for.
    await page
      .locator('#trustee-status')
      .filter({ hasText: /^Not done/ })
      .waitFor();
    expect(await page.locator('#trustee-status').innerText()).not.toContain('is not defined');
    expect(violations).toEqual([]);
    await page.close();
  });

  it('/docs renders the API list', async () => {
    const { page, violations } = await open('/docs/');
    await page.locator('.opblock').first().waitFor({ timeout: 20_000 });
    expect(await page.locator('.opblock-tag').count()).toBeGreaterThan(0);
    // An operation opens.
    await page.locator('.opblock-summary').first().click();
    await page.locator('.opblock .opblock-body').first().waitFor();
    expect(violations).toEqual([]);
    await page.close();
  });
});

/**
 * Markup an attacker got into a page: an inline script and an event handler that would send whatever
 * is typed into the page to the service (where the attacker reads it back), and on the nonce pages a
 * script of this origin that the page itself does not load.
 */
const injection = (external: boolean) =>
  `<script>window.__injected = true; document.addEventListener('input', (e) => fetch('/stolen?inline=' + encodeURIComponent(e.target.value)));</script>` +
  `<img src="/favicon.ico" onload="window.__injected = true; fetch('/stolen?handler')">` +
  (external ? '<script src="/circuits/snarkjs.min.js"></script>' : '');

describe('a script injected into a page does not run', () => {
  it.each([
    ['the trustee page', (): string => '/governance/trustee/', '#trustee-file', true],
    ['the voting page', (): string => `/governance/proposals/${voting}/`, '#identity', true],
    ['/docs', (): string => '/docs/', undefined, false],
  ] as const)('%s', async (what, pathOf, field, external) => {
    const path = pathOf();
    const page = await context.newPage();
    const { violations } = await watchPolicy(page);
    // The page as the service sent it, headers and all, with the attacker's markup where the body starts.
    await page.route(`${base}${path}`, async (route) => {
      const res = await route.fetch();
      const html = (await res.text()).replace('<body>', (b) => `${b}${injection(external)}`);
      await route.fulfill({ response: res, body: html });
    });
    await page.goto(`${base}${path}`);
    // Each injected script refused: the inline one, the handler and (on the nonce pages) the file.
    const refusals = () => violations.filter((v) => v.startsWith('script-src'));
    await expect.poll(() => refusals().length, { timeout: 5_000 }).toBe(external ? 3 : 2);
    // The voting page keeps its paste box folded away (the identity file is picked instead).
    if (field === '#identity') await page.click('#identity-paste summary');
    if (field) await page.fill(field, JSON.stringify({ secret: 'trustee-secret-7d1e9c' }));
    expect(await typeOf(page, '__injected'), what).toBe('undefined');
    if (path === '/governance/trustee/') {
      // snarkjs is this origin's, but the trustee page does not load it: an injected tag cannot either.
      expect(await typeOf(page, 'snarkjs')).toBe('undefined');
      // The page's own module still works beside the refused markup.
      await page.fill('#room', 'room_01jd3zzzzzzzzzzzzzzzzzzzzz');
      await page.click('#ceremony');
      await page
        .locator('#trustee-status')
        .filter({ hasText: /^Not done/ })
        .waitFor();
    }
    // Nothing typed into the page reached the service.
    expect(received.filter((p) => p.startsWith('/stolen'))).toEqual([]);
    await page.close();
  });
});
