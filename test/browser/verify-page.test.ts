// The verification page in a real browser: open the form, enter a proof id, submit, and read the
// result page — the public facts are there, nothing private is.
import { existsSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { closeDeps, depsFromEnv } from '../../api/main';
import { drive, evidence, prepare, testProver, waitForPackage } from '../workflows-e2e/helpers';
import type { TestProver } from '../workflows-e2e/helpers';

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
const secrets = ['Grant applicant: Dr. Ada Example, ID 998877', 'Panel scoring sheet: 7/9/8'];

const deps = depsFromEnv();
let server: Server;
let base: string;
let browser: Browser;
let prover: TestProver;
let ids: { workflowId: string; proofId: string };

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: install it (apt-get install -y chromium) to run the browser tests.`,
    );
  }
  server = createApp(deps).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  prover = testProver();
  const request = supertest(base);
  ids = await prepare(request, 'Grant Review');
  await drive(request, ids.workflowId, 'Grant Review', { secrets });
  await waitForPackage(request, ids.proofId);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
});
afterAll(async () => {
  await browser?.close();
  await prover?.close();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  await closeDeps(deps);
});

describe('the verify page in a browser', () => {
  it('takes a proof id through the form to the result page', async () => {
    const page = await browser.newPage({ javaScriptEnabled: false });
    await page.goto(`${base}/proof-workflows/verify/`);
    expect(await page.title()).toBe('Verify a proof workflow');
    await page.fill('#proofId', ids.proofId);
    await Promise.all([
      page.waitForURL(`**/proof-workflows/verify/${ids.proofId}/`),
      page.click('#by-id button'),
    ]);

    const text = await page.locator('main').innerText();
    expect(await page.locator('h1').innerText()).toBe(`Proof ${ids.proofId}`);
    for (const fact of ['existed', 'completed', 'approvalsMet', 'sequenceRespected', 'notAltered']) {
      expect(await page.locator(`td[data-fact="${fact}"]`).innerText(), fact).toBe('yes');
    }
    expect(await page.locator('tr[data-stage]').count()).toBe(5);
    expect(await page.locator('tr[data-stage="panel_review"] td').nth(1).innerText()).toContain(
      '3 approvals',
    );
    expect(await page.locator('#chain-head').innerText()).toMatch(/^[0-9a-f]{64}$/);
    expect(text).toContain('Signed by key');
    expect(text).toContain('Included as leaf');

    const html = await page.content();
    for (const s of [...secrets, ...secrets.map(evidence), ids.workflowId]) expect(html).not.toContain(s);
    await page.close();
  });

  it('shows the 404 page for an unknown proof id', async () => {
    const page = await browser.newPage();
    const res = await page.goto(`${base}/proof-workflows/verify/prf_01jd3zzzzzzzzzzzzzzzzzzzzz/`);
    expect(res?.status()).toBe(404);
    expect(await page.locator('h1').innerText()).toBe('Proof not found');
    await page.close();
  });
});
