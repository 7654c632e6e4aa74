// The private-payments hand-off against a real HTTP stand-in provider on loopback: our challenge in
// the spec's shape, signed by a wallet (ed25519, base58 address), login at the stand-in, balances
// through our proxy with the Bearer token; and the provider's health and on-chain proof, proxied.
import { generateKeyPairSync, randomBytes, sign, verify, createPublicKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import bs58 from 'bs58';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers';
import { captureLogs, expectProblem } from './helpers';

const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');
const MINT = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';

function wallet() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_ED25519.length);
  return { address: bs58.encode(raw), privateKey };
}
const signText = (text: string, key: KeyObject) => bs58.encode(sign(null, Buffer.from(text), key));

/** The stand-in provider: checks the wallet's signature over the challenge, issues tokens, serves balances. */
function startProvider() {
  const tokens = new Map<string, string>();
  const seenAuthorization: string[] = [];
  const server = http.createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const url = new URL(req.url ?? '/', 'http://stand-in');
    if (req.method === 'GET' && url.pathname === '/health')
      return send(200, { ok: true, runtime: 'stand-in' });
    if (req.method === 'GET' && url.pathname === '/v1/onchain-proof') {
      return send(200, {
        program: 'PrivPay1111111111111111111111111111111111111',
        slot: 314159,
        verified: true,
      });
    }
    if (req.method === 'POST' && url.pathname === '/v1/spl/login') {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        try {
          const { wallet: address, challenge, signature } = JSON.parse(raw) as Record<string, string>;
          const [title, stamp, user] = challenge!.split('\n');
          const at = Date.parse(stamp!.replace(/^Timestamp: /, ''));
          if (!title || user !== `User: ${address}` || Math.abs(Date.now() - at) > 5 * 60_000)
            return send(400, { ok: false, error: 'bad challenge' });
          const key = createPublicKey({
            key: Buffer.concat([SPKI_ED25519, bs58.decode(address!)]),
            format: 'der',
            type: 'spki',
          });
          if (!verify(null, Buffer.from(challenge!), key, Buffer.from(bs58.decode(signature!))))
            return send(401, { ok: false, error: 'bad signature' });
          const token = randomBytes(24).toString('base64url');
          tokens.set(token, address!);
          return send(200, { ok: true, accessToken: token, expiresIn: 3600 });
        } catch {
          return send(400, { ok: false, error: 'malformed' });
        }
      });
      return undefined;
    }
    const m = /^\/v1\/spl\/balances\/([1-9A-HJ-NP-Za-km-z]+)$/.exec(url.pathname);
    if (req.method === 'GET' && m) {
      seenAuthorization.push(req.headers.authorization ?? '');
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (!token || tokens.get(token) !== m[1]) return send(401, { ok: false, error: 'unauthorized' });
      return send(200, {
        ok: true,
        wallet: m[1],
        mint: url.searchParams.get('mint'),
        balance: '1234500',
        decimals: 6,
      });
    }
    return send(404, { ok: false });
  });
  return new Promise<{ url: string; seenAuthorization: string[]; close(): Promise<void> }>((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        seenAuthorization,
        close: () => new Promise((r) => server.close(() => r())),
      });
    });
  });
}

const provider = await startProvider();
Object.assign(process.env, {
  PAYMENTS_PROVIDER_URL: provider.url,
  PAYMENTS_PROVIDER_MOCK: 'true',
  PROVIDER_TIMEOUT_MS: '1000',
});
const { testApp } = await import('../helpers');

let app: TestApp;
let logs: Awaited<ReturnType<typeof captureLogs>>;
beforeAll(async () => {
  logs = await captureLogs();
  app = testApp();
});
afterAll(async () => {
  logs?.stop();
  await app?.close();
  await provider.close().catch(() => undefined);
});

const pp = '/api/v1/private-payments';

describe('private-payments hand-off', () => {
  it('returns the challenge in the spec shape, field for field', async () => {
    const { address } = wallet();
    const before = Date.now();
    const res = await app.request.get(`${pp}/challenge?wallet=${address}`).expect(200);
    expect(Object.keys(res.body).sort()).toEqual(['challenge', 'next', 'ok', 'source']);
    expect(res.body.ok).toBe(true);
    expect(typeof res.body.source).toBe('string');
    expect(res.body.source).toBe(new URL(provider.url).host);
    expect(Object.keys(res.body.challenge)).toEqual(['challenge']);
    const lines = (res.body.challenge.challenge as string).split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/\[MOCK\]/);
    const stamp = /^Timestamp: (.+)$/.exec(lines[1]!)![1]!;
    expect(stamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
    expect(Date.parse(stamp)).toBeGreaterThanOrEqual(before - 1000);
    expect(lines[2]).toBe(`User: ${address}`);
    expect(Object.keys(res.body.next).sort()).toEqual(['login', 'privateBalance']);
    expect(res.body.next.login).toContain(`POST ${provider.url}/v1/spl/login`);
    expect(res.body.next.login).toMatch(/signed challenge/);
    expect(res.body.next.privateBalance).toContain(`/api/v1/private-payments/balances/${address}?mint=`);
    expect(res.body.next.privateBalance).toContain('Authorization: Bearer <ACCESS_TOKEN>');
  });

  it('logs in through the stand-in provider and reads balances through the proxy', async () => {
    const w = wallet();
    const { challenge } = (await app.request.get(`${pp}/challenge?wallet=${w.address}`).expect(200)).body
      .challenge;
    const login = await fetch(`${provider.url}/v1/spl/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ wallet: w.address, challenge, signature: signText(challenge, w.privateKey) }),
    });
    expect(login.status).toBe(200);
    const { accessToken } = (await login.json()) as { accessToken: string };

    const balance = await app.request
      .get(`${pp}/balances/${w.address}?mint=${MINT}`)
      .set('Authorization', `Bearer ${accessToken}`)
      .expect(200);
    expect(balance.body).toEqual({
      ok: true,
      wallet: w.address,
      mint: MINT,
      balance: '1234500',
      decimals: 6,
    });
    expect(provider.seenAuthorization.at(-1)).toBe(`Bearer ${accessToken}`);

    // Someone else's signature does not log in; another wallet's token reads nothing.
    const other = wallet();
    const forged = await fetch(`${provider.url}/v1/spl/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        wallet: w.address,
        challenge,
        signature: signText(challenge, other.privateKey),
      }),
    });
    expect(forged.status).toBe(401);
    expectProblem(
      await app.request
        .get(`${pp}/balances/${other.address}?mint=${MINT}`)
        .set('Authorization', `Bearer ${accessToken}`),
      401,
      'unauthorized',
    );
    expect(logs.lines.length).toBeGreaterThan(0);
    expect(logs.lines.join('')).not.toContain(accessToken);
  });

  it('refuses a balance query without a Bearer token, and a malformed wallet or mint', async () => {
    const { address } = wallet();
    const calls = provider.seenAuthorization.length;
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
    expect(provider.seenAuthorization.length).toBe(calls);
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
  });

  it('proxies the provider’s health and on-chain proof, and says when it is unreachable', async () => {
    const health = await app.request.get(`${pp}/health`).expect(200);
    expect(health.body).toMatchObject({
      configured: true,
      reachable: true,
      healthy: true,
      provider: { ok: true },
    });
    expect(typeof health.body.latencyMs).toBe('number');
    const proof = await app.request.get(`${pp}/onchain-proof`).expect(200);
    expect(proof.body).toMatchObject({ configured: true, proof: { slot: 314159, verified: true } });

    await provider.close();
    const down = await app.request.get(`${pp}/health`).expect(503);
    expect(down.body).toMatchObject({ configured: true, reachable: false, healthy: false });
    expectProblem(await app.request.get(`${pp}/onchain-proof`), 502, 'provider_unreachable');
  });
});
