// Referral credit goes only to a referrer whose job was created by someone else: an authenticated agent
// that is not the referrer, not registered with its wallet and not registered from its network. The
// referrer plays each way of paying itself — no key at all, a license, its own key, a second agent with
// its wallet, a second agent minted from its own /64 — and each is refused before anything is written;
// a genuine agent from elsewhere is credited.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem, newWallet } from '../exchange/fixtures';
import type { Wallet } from '../exchange/fixtures';
import { behindProxy, grantLicense, sha256Of, testApp } from '../helpers';
import type { TestApp } from '../helpers';

let app: TestApp;
let proxied: ReturnType<typeof behindProxy>;
let referrerWallet: Wallet;
let referrer: { id: string; auth: { Authorization: string } };
let code: string;
let referralId: string;
const REFERRER_NETWORK = '2001:db8:cafe:1';

async function register(name: string, from: string, wallet = newWallet()) {
  const res = await proxied
    .post('/api/registry/register')
    .set('X-Forwarded-For', from)
    .send({ name, walletPublicKey: wallet.publicKey })
    .expect(201);
  return { id: res.body.agent.id as string, auth: { Authorization: `Bearer ${res.body.apiKey}` } };
}

beforeAll(async () => {
  app = testApp();
  proxied = behindProxy(app);
  referrerWallet = newWallet();
  referrer = await register('Referrer', `${REFERRER_NETWORK}::1`, referrerWallet);
  const res = await app.request.post('/api/referrals').set(referrer.auth).send({}).expect(201);
  code = res.body.referral.code;
  referralId = res.body.referral.id;
});
afterAll(() => app.close());

const count = async (table: string) => Number((await app.deps.db(table).count({ n: '*' }))[0]!.n);
const credited = async () =>
  Number((await app.deps.db('jobs').where({ referral_id: referralId }).count({ n: '*' }))[0]!.n);

/** A free job with the referrer's code, as `auth` (none: anonymous), by query or header. */
async function jobWithCode(auth?: { Authorization: string }, via: 'query' | 'header' = 'query') {
  const req = app.request.post(via === 'query' ? `/api/jobs?ref=${code.toLowerCase()}` : '/api/jobs');
  if (via === 'header') req.set('X-Referral-Code', code);
  if (auth) req.set(auth);
  return req.send({ service: 'attest.timestamp', input: { digest: await sha256Of(String(Math.random())) } });
}

/** The refusal, and nothing written: no job, no attribution. */
async function refused(act: () => Promise<Parameters<typeof expectProblem>[0]>, code: string) {
  const [jobs, attributed] = [await count('jobs'), await credited()];
  const res = await act();
  expectProblem(res, 422, code);
  expect(res.body.errors).toEqual([expect.objectContaining({ path: 'ref' })]);
  expect(await count('jobs')).toBe(jobs);
  expect(await credited()).toBe(attributed);
}

describe('referral credit', () => {
  it('is refused to an anonymous job, by query or header: 422 referral_needs_agent', async () => {
    await refused(() => jobWithCode(), 'referral_needs_agent');
    await refused(() => jobWithCode(undefined, 'header'), 'referral_needs_agent');
  });

  it('is refused to a job a license creates', async () => {
    const license = await grantLicense(app.deps.db, 'Starter');
    await refused(() => jobWithCode(license.auth), 'referral_needs_agent');
  });

  it('is refused to the referrer itself', async () => {
    await refused(() => jobWithCode(referrer.auth), 'self_referral');
  });

  it('is refused to a second agent with the referrer’s wallet, registered elsewhere', async () => {
    const puppet = await register('Same wallet', '198.51.100.90', referrerWallet);
    await refused(() => jobWithCode(puppet.auth, 'header'), 'self_referral');
  });

  it('is refused to a second agent registered from the referrer’s network (another address of its /64)', async () => {
    const puppet = await register('Same network', `${REFERRER_NETWORK}:ffff:ffff:ffff:fffe`);
    await refused(() => jobWithCode(puppet.auth), 'self_referral');
  });

  it('is given for a job of a genuine other agent, from another network and with another wallet', async () => {
    const buyer = await register('Buyer', '203.0.113.77');
    const before = await credited();
    const res = await jobWithCode(buyer.auth);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect((await app.deps.db('jobs').where({ id: res.body.job.id }).first()).referral_id).toBe(referralId);
    expect(await credited()).toBe(before + 1);
  });
});
