// The private-payments hand-off end to end against the stand-in provider on loopback: our challenge in
// the spec's shape with a random nonce, signed by a real ed25519 wallet, logged in at the stand-in
// (which redeems it once at the service, authenticated by the shared provider secret), balances
// through our proxy with the Bearer token; unauthenticated, replayed, expired and altered redemptions
// and expired or altered tokens refused; the provider's health and on-chain proof proxied.
import { generateKeyPairSync, sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import bs58 from 'bs58';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandInProvider } from '../../dev/stack/payments-standin';
import type { TestApp } from '../helpers';
import { captureLogs, expectProblem } from '../licensing/helpers';

const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');
const MINT = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
const TOKEN_TTL_SECONDS = 60;
const pp = '/api/v1/private-payments';

function wallet() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_ED25519.length);
  return { address: bs58.encode(raw), privateKey };
}
const signText = (text: string, key: KeyObject) => bs58.encode(sign(null, Buffer.from(text), key));

// The service on a real loopback port, because the stand-in redeems challenges there over HTTP.
let serve: http.RequestListener | undefined;
const api = http.createServer((req, res) => serve!(req, res));
await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
const apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;

let skewMs = 0;
const PROVIDER_SECRET = 'stand-in-provider-secret-5f1c9a7e3b2d4c6a';
const provider = await startStandInProvider({
  redeemUrl: `${apiUrl}${pp}/challenge/redeem`,
  providerSecret: PROVIDER_SECRET,
  challengeTtlSeconds: 300,
  tokenTtlSeconds: TOKEN_TTL_SECONDS,
  clock: () => Date.now() + skewMs,
});
// A provider that holds the signed text but not the secret.
const impostor = await startStandInProvider({
  redeemUrl: `${apiUrl}${pp}/challenge/redeem`,
  providerSecret: 'not-the-provider-secret-0000000000000000',
});
Object.assign(process.env, {
  PAYMENTS_PROVIDER_URL: provider.url,
  PAYMENTS_PROVIDER_SECRET: PROVIDER_SECRET,
  PAYMENTS_PROVIDER_MOCK: 'true',
  PROVIDER_TIMEOUT_MS: '1000',
  // The health test stops the provider and asks again at once: no reused status answer.
  PROVIDER_STATUS_CACHE_MS: '0',
  LOGIN_CHALLENGE_TTL_SECONDS: '300',
});
const { testApp } = await import('../helpers');
const { createApp } = await import('../../api/app');
const { challengeTitle } = await import('../../shared/providers/handoff');
const { issueLoginChallenge, signRedemption } = await import('../../shared/providers/payments-login');

let app: TestApp;
let logs: Awaited<ReturnType<typeof captureLogs>>;
beforeAll(async () => {
  logs = await captureLogs();
  app = testApp();
  serve = createApp(app.deps) as unknown as http.RequestListener;
});
afterAll(async () => {
  logs?.stop();
  await provider.close().catch(() => undefined);
  await impostor.close();
  await new Promise((r) => api.close(r));
  await app?.close();
});

async function challengeFor(address: string): Promise<string> {
  return (await app.request.get(`${pp}/challenge?wallet=${address}`).expect(200)).body.challenge.challenge;
}

/** The provider's own call to the service: the redemption, signed with the provider secret. */
function redeem(body: object, opts: { secret?: string; at?: number; header?: string } = {}) {
  const header = opts.header ?? signRedemption(opts.secret ?? PROVIDER_SECRET, body, opts.at);
  return app.request.post(`${pp}/challenge/redeem`).set('X-Provider-Signature', header).send(body);
}

async function login(
  body: { wallet: string; challenge: string; signature: string },
  at: { url: string } = provider,
) {
  const res = await fetch(`${at.url}/v1/spl/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A wallet logged in through the whole hand-off: its access token. */
async function loggedIn(w: ReturnType<typeof wallet>): Promise<string> {
  const challenge = await challengeFor(w.address);
  const res = await login({ wallet: w.address, challenge, signature: signText(challenge, w.privateKey) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.accessToken as string;
}

const balances = (address: string, token: string) =>
  app.request.get(`${pp}/balances/${address}?mint=${MINT}`).set('Authorization', `Bearer ${token}`);

describe('private-payments hand-off', () => {
  it('returns the challenge in the spec shape, field for field, recorded as issued', async () => {
    const { address } = wallet();
    const before = Date.now();
    const res = await app.request.get(`${pp}/challenge?wallet=${address}`).expect(200);
    expect(Object.keys(res.body).sort()).toEqual(['challenge', 'next', 'ok', 'source']);
    expect(res.body.ok).toBe(true);
    expect(res.body.source).toBe(new URL(provider.url).host);
    expect(Object.keys(res.body.challenge)).toEqual(['challenge']);
    const lines = (res.body.challenge.challenge as string).split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^proof-exchange private payments login \[MOCK\] nonce:[A-Za-z0-9_-]{22}$/);
    const stamp = /^Timestamp: (.+)$/.exec(lines[1]!)![1]!;
    expect(stamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
    expect(Date.parse(stamp)).toBeGreaterThanOrEqual(before - 1000);
    expect(lines[2]).toBe(`User: ${address}`);
    expect(Object.keys(res.body.next).sort()).toEqual(['login', 'privateBalance']);
    expect(res.body.next.login).toContain(`POST ${provider.url}/v1/spl/login`);
    expect(res.body.next.login).toMatch(/signed challenge/);
    expect(res.body.next.login).toContain('once, within 300 s');
    expect(res.body.next.privateBalance).toContain(`/api/v1/private-payments/balances/${address}?mint=`);
    expect(res.body.next.privateBalance).toContain('Authorization: Bearer <ACCESS_TOKEN>');

    const rows = await app.deps.db('login_challenges').where({ wallet: address });
    expect(rows).toHaveLength(1);
    expect(rows[0].expires_at.getTime() - rows[0].issued_at.getTime()).toBe(300_000);
    expect(rows[0].redeemed_at).toBeNull();
  });

  it('issues a distinct text for every challenge, by its random nonce, even within one millisecond', async () => {
    const { address } = wallet();
    const now = new Date();
    const opts = { title: challengeTitle(), ttlSeconds: 300, now };
    const a = await issueLoginChallenge(app.deps.db, address, opts);
    const b = await issueLoginChallenge(app.deps.db, address, opts);
    expect(a.challenge).not.toBe(b.challenge);
    expect(b.issuedAt.getTime()).toBe(a.issuedAt.getTime());
    const nonce = (text: string) => /nonce:(\S+)$/.exec(text.split('\n')[0]!)![1];
    expect(nonce(a.challenge)).not.toBe(nonce(b.challenge));
  });

  it('refuses a redemption without the provider’s authentication: holding the signed text is not enough', async () => {
    const w = wallet();
    const challenge = await challengeFor(w.address);
    const signed = { wallet: w.address, challenge, signature: signText(challenge, w.privateKey) };
    const unsigned = await app.request.post(`${pp}/challenge/redeem`).send(signed);
    expectProblem(unsigned, 401, 'provider_unauthenticated');
    expect(unsigned.headers['www-authenticate']).toBe('X-Provider-Signature');
    expectProblem(
      await redeem(signed, { secret: 'a-guessed-secret-000000000000000000000' }),
      401,
      'provider_unauthenticated',
    );
    expectProblem(await redeem(signed, { at: Date.now() - 10 * 60_000 }), 401, 'provider_unauthenticated');
    expectProblem(await redeem(signed, { header: 'anything' }), 401, 'provider_unauthenticated');
    // A valid signature over another body does not carry over.
    const other = { ...signed, challenge: `${challenge} ` };
    expectProblem(
      await redeem(signed, { header: signRedemption(PROVIDER_SECRET, other) }),
      401,
      'provider_unauthenticated',
    );
    // A provider without the secret cannot log the wallet in either.
    expect(await login(signed, impostor)).toMatchObject({
      status: 401,
      body: { error: 'provider_unauthenticated' },
    });
    const row = await app.deps.db('login_challenges').where({ wallet: w.address }).first();
    expect(row.redeemed_at).toBeNull();
    // The real provider still can, once.
    expect((await login(signed)).status).toBe(200);
  });

  it('logs a real wallet in at the stand-in and reads demo balances through the proxy', async () => {
    const w = wallet();
    const challenge = await challengeFor(w.address);
    const res = await login({ wallet: w.address, challenge, signature: signText(challenge, w.privateKey) });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, tokenType: 'Bearer', expiresIn: TOKEN_TTL_SECONDS });
    expect(Date.parse(res.body.expiresAt as string)).toBeGreaterThan(Date.now());
    const accessToken = res.body.accessToken as string;

    const served = provider.served.balances;
    const balance = await balances(w.address, accessToken).expect(200);
    expect(balance.body).toMatchObject({ ok: true, demo: true, wallet: w.address, mint: MINT, decimals: 6 });
    expect(balance.body.balance).toMatch(/^\d+$/);
    expect(balance.body.note).toMatch(/demo/i);
    expect(provider.served.balances).toBe(served + 1);
    // Deterministic: the same wallet and mint show the same figure.
    expect((await balances(w.address, accessToken).expect(200)).body).toEqual(balance.body);

    // The spent challenge is marked redeemed at the service.
    const row = await app.deps.db('login_challenges').where({ wallet: w.address }).first();
    expect(row.redeemed_at).toBeInstanceOf(Date);

    // Someone else's signature does not log in; a token reads only its own wallet.
    const other = wallet();
    const forged = await login({
      wallet: w.address,
      challenge,
      signature: signText(challenge, other.privateKey),
    });
    expect(forged).toMatchObject({ status: 401, body: { error: 'signature_invalid' } });
    const crossed = await balances(other.address, accessToken);
    expectProblem(crossed, 401, 'unauthorized');
    expect(crossed.body.providerReason).toBe('token_wallet_mismatch');
    expect(logs.lines.length).toBeGreaterThan(0);
    expect(logs.lines.join('')).not.toContain(accessToken);
  });

  it('issues and redeems nothing while no provider secret is configured', async () => {
    const w = wallet();
    const challenge = await challengeFor(w.address);
    const signed = { wallet: w.address, challenge, signature: signText(challenge, w.privateKey) };
    const { env } = await import('../../shared/platform/env');
    env.PAYMENTS_PROVIDER_SECRET = undefined;
    try {
      expectProblem(
        await app.request.get(`${pp}/challenge?wallet=${w.address}`),
        503,
        'payments_provider_secret_unset',
      );
      expectProblem(await redeem(signed), 503, 'payments_provider_secret_unset');
    } finally {
      env.PAYMENTS_PROVIDER_SECRET = PROVIDER_SECRET;
    }
    expect(await app.deps.db('login_challenges').where({ wallet: w.address })).toHaveLength(1);
    expect((await login(signed)).status).toBe(200);
  });

  it('refuses a replayed challenge: it logs in once', async () => {
    const w = wallet();
    const challenge = await challengeFor(w.address);
    const signed = { wallet: w.address, challenge, signature: signText(challenge, w.privateKey) };
    expect((await login(signed)).status).toBe(200);
    expect(await login(signed)).toMatchObject({ status: 401, body: { error: 'challenge_used' } });
    expectProblem(await redeem(signed), 409, 'challenge_used');
  });

  it('refuses an expired challenge, at the stand-in and at the service', async () => {
    const w = wallet();
    const title = challengeTitle();
    const old = await issueLoginChallenge(app.deps.db, w.address, {
      title,
      ttlSeconds: 300,
      now: new Date(Date.now() - 6 * 60_000),
    });
    const signed = {
      wallet: w.address,
      challenge: old.challenge,
      signature: signText(old.challenge, w.privateKey),
    };
    // The stand-in refuses it by its Timestamp before asking the service.
    expect(await login(signed)).toMatchObject({ status: 401, body: { error: 'challenge_expired' } });
    // A provider whose clock runs behind lets it through; the service's record still refuses it.
    skewMs = -2 * 60_000;
    try {
      expect(await login(signed)).toMatchObject({ status: 401, body: { error: 'challenge_expired' } });
    } finally {
      skewMs = 0;
    }
    expectProblem(await redeem(signed), 409, 'challenge_expired');
    const row = await app.deps.db('login_challenges').where({ wallet: w.address }).first();
    expect(row.redeemed_at).toBeNull();
  });

  it('refuses an altered or never-issued challenge, and the original still logs in', async () => {
    const w = wallet();
    const challenge = await challengeFor(w.address);
    const [title, stamp, user] = challenge.split('\n') as [string, string, string];
    const later = new Date(Date.parse(stamp.slice('Timestamp: '.length)) + 1).toISOString();
    const alterations = [
      `${title}\nTimestamp: ${later}\n${user}`,
      `${title.replace(' [MOCK]', '')}\n${stamp}\n${user}`,
      `${challengeTitle()}\nTimestamp: ${new Date().toISOString()}\n${user}`, // never issued
    ];
    for (const text of alterations) {
      const res = await login({
        wallet: w.address,
        challenge: text,
        signature: signText(text, w.privateKey),
      });
      expect(res, text).toMatchObject({ status: 401, body: { error: 'challenge_unknown' } });
    }
    // The text changed after signing: the signature no longer verifies.
    const signature = signText(challenge, w.privateKey);
    expect(await login({ wallet: w.address, challenge: alterations[0]!, signature })).toMatchObject({
      status: 401,
      body: { error: 'signature_invalid' },
    });
    const extraLine = `${challenge}\nNonce: 1`;
    expect(
      await login({ wallet: w.address, challenge: extraLine, signature: signText(extraLine, w.privateKey) }),
    ).toMatchObject({ status: 400, body: { error: 'challenge_malformed' } });
    // Another wallet cannot redeem it, even signing it with its own key.
    const other = wallet();
    expectProblem(
      await redeem({ wallet: other.address, challenge, signature: signText(challenge, other.privateKey) }),
      404,
      'challenge_unknown',
    );
    expectProblem(
      await redeem({ wallet: w.address, challenge: alterations[0], signature }),
      401,
      'challenge_signature_invalid',
    );
    expect((await login({ wallet: w.address, challenge, signature })).status).toBe(200);
  });

  it('refuses an altered token and an expired token with 401 problem+json', async () => {
    const w = wallet();
    const token = await loggedIn(w);
    await balances(w.address, token).expect(200);

    const [payload, mac] = token.split('.') as [string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as { exp: number };
    const extended = Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + 86_400_000 })).toString(
      'base64url',
    );
    for (const altered of [`${extended}.${mac}`, `${payload}.${mac.slice(0, -2)}AA`, `${payload}`]) {
      const res = await balances(w.address, altered);
      expectProblem(res, 401, 'unauthorized');
      expect(res.headers['www-authenticate']).toBe('Bearer');
      expect(res.body.providerReason).toBe('token_invalid');
    }

    skewMs = (TOKEN_TTL_SECONDS + 1) * 1000;
    try {
      const res = await balances(w.address, token);
      expectProblem(res, 401, 'unauthorized');
      expect(res.body.providerReason).toBe('token_expired');
    } finally {
      skewMs = 0;
    }
    await balances(w.address, token).expect(200);
  });

  it('refuses a balance query without a Bearer token, and a malformed wallet, mint or redemption', async () => {
    const { address } = wallet();
    const calls = provider.served.balances;
    const missing = await app.request.get(`${pp}/balances/${address}?mint=${MINT}`);
    expectProblem(missing, 401, 'unauthorized');
    expect(missing.headers['www-authenticate']).toBe('Bearer');
    expectProblem(
      await app.request.get(`${pp}/balances/${address}`).set('Authorization', 'Basic eDp5'),
      401,
      'unauthorized',
    );
    expectProblem(
      await app.request.get(`${pp}/balances/not-a-wallet`).set('Authorization', 'Bearer t'),
      400,
      'validation_failed',
    );
    expectProblem(
      await app.request.get(`${pp}/balances/${address}?mint=0xabc`).set('Authorization', 'Bearer t'),
      400,
      'validation_failed',
    );
    expect(provider.served.balances).toBe(calls);
    expectProblem(
      await app.request.get(`${pp}/challenge?wallet=0x${'a'.repeat(40)}`),
      400,
      'validation_failed',
    );
    expectProblem(await app.request.get(`${pp}/challenge`), 400, 'validation_failed');
    expectProblem(
      await app.request.get(`${pp}/challenge?wallet=${address}&extra=1`),
      400,
      'validation_failed',
    );
    const challenge = await challengeFor(address);
    for (const body of [
      { wallet: address, challenge, signature: 'not-base58-0OIl' },
      { wallet: 'nope', challenge, signature: bs58.encode(Buffer.alloc(64, 1)) },
      { wallet: address, challenge, signature: bs58.encode(Buffer.alloc(64, 1)), extra: true },
      { wallet: address, signature: bs58.encode(Buffer.alloc(64, 1)) },
    ]) {
      expectProblem(await app.request.post(`${pp}/challenge/redeem`).send(body), 400, 'validation_failed');
    }
  });

  it('proxies the stand-in’s health and on-chain proof, and says when it is unreachable', async () => {
    const health = await app.request.get(`${pp}/health`).expect(200);
    expect(health.body).toMatchObject({
      configured: true,
      reachable: true,
      healthy: true,
      provider: { ok: true, mock: true },
    });
    expect(typeof health.body.latencyMs).toBe('number');
    const proof = await app.request.get(`${pp}/onchain-proof`).expect(200);
    expect(proof.body).toMatchObject({ configured: true, proof: { mock: true, verified: false } });

    await provider.close();
    const down = await app.request.get(`${pp}/health`).expect(503);
    expect(down.body).toMatchObject({ configured: true, reachable: false, healthy: false });
    expectProblem(await app.request.get(`${pp}/onchain-proof`), 502, 'provider_unreachable');
  });
});
