// Idempotency keys belong to their caller: an anonymous key is scoped to the client address (through
// TRUST_PROXY hops), so another address replaying it sees neither the first response nor a 409 that
// would confirm a guessed body; keys are at least 16 characters; a 401 stores nothing; and what is
// stored opens only with the server secret and the client's key together.
import { hkdfSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { open } from '../../shared/platform/sealing';
import { expectProblem, newWallet } from '../exchange/fixtures';
import { behindProxy, testApp } from '../helpers';
import type { TestApp } from '../helpers';

let app: TestApp;
let proxied: ReturnType<typeof behindProxy>;
beforeAll(() => {
  app = testApp();
  // One trusted proxy hop in front, as TRUST_PROXY=1 says: X-Forwarded-For names the client.
  proxied = behindProxy(app);
});
afterAll(() => app.close());

const VICTIM = '203.0.113.5';
const ATTACKER = '198.51.100.7';
const keys = async () => Number((await app.deps.db('idempotency_keys').count({ n: '*' }))[0]!.n);

describe('idempotency keys across callers', () => {
  it('never replays a reply carrying an API key to an anonymous caller, from its address or another', async () => {
    const body = { name: 'victim agent', walletPublicKey: newWallet().publicKey };
    const key = 'register-0000000001';
    const first = await proxied
      .post('/api/registry/register')
      .set('X-Forwarded-For', VICTIM)
      .set('Idempotency-Key', key)
      .send(body)
      .expect(201);
    expect(first.body.apiKey).toMatch(/^ak_/);

    // Anyone else behind the victim's address (a NAT, a proxy) is the same anonymous caller: the
    // repeat names the agent it made, and never carries its key.
    const retry = await proxied
      .post('/api/registry/register')
      .set('X-Forwarded-For', VICTIM)
      .set('Idempotency-Key', key)
      .send(body)
      .expect(409);
    expect(retry.body.code).toBe('idempotency_reply_withheld');
    expect(retry.text).not.toContain(first.body.apiKey);

    // The attacker, from elsewhere, with the same key and body rebuilt from public search.
    const stolen = await proxied
      .post('/api/registry/register')
      .set('X-Forwarded-For', ATTACKER)
      .set('Idempotency-Key', key)
      .send(body);
    expect(stolen.headers['idempotency-replayed']).toBeUndefined();
    expect(JSON.stringify(stolen.body)).not.toContain(first.body.apiKey);
  });

  it('gives another address no 409 oracle on a victim’s key', async () => {
    const key = 'prove-victim-000000001';
    await proxied
      .post('/api/proof-workflows/blind-policy/prove')
      .set('X-Forwarded-For', VICTIM)
      .set('Idempotency-Key', key)
      .send({ policy: 'threshold', inputs: { value: '10', threshold: '11' } })
      .expect(422);
    // Before, another body under the victim's key answered 409 and the victim's own body replayed:
    // a search over values found the private one. Now each address has its own keys.
    for (const [from, value] of [
      [ATTACKER, '9'],
      ['198.51.100.8', '10'],
    ] as const) {
      const probe = await proxied
        .post('/api/proof-workflows/blind-policy/prove')
        .set('X-Forwarded-For', from)
        .set('Idempotency-Key', key)
        .send({ policy: 'threshold', inputs: { value, threshold: '11' } });
      expect(probe.status).toBe(422);
      expect(probe.headers['idempotency-replayed']).toBeUndefined();
    }
  });

  it('refuses keys shorter than 16 characters before anything is written', async () => {
    const before = await keys();
    const agents = Number((await app.deps.db('agents').count({ n: '*' }))[0]!.n);
    const res = await app.request
      .post('/api/registry/register')
      .set('Idempotency-Key', 'register-1')
      .send({ name: 'short key', walletPublicKey: newWallet().publicKey });
    expectProblem(res, 400, 'invalid_idempotency_key');
    expect(await keys()).toBe(before);
    expect(Number((await app.deps.db('agents').count({ n: '*' }))[0]!.n)).toBe(agents);
  });

  it('stores nothing for a request that did not authenticate', async () => {
    const before = await keys();
    for (const auth of ['Bearer ak_' + 'x'.repeat(43), 'Bearer junk-token-value']) {
      expectProblem(
        await app.request
          .post('/api/referrals')
          .set('Authorization', auth)
          .set('Idempotency-Key', `unauthenticated-${auth.length}-0001`)
          .send({}),
        401,
        'unauthorized',
      );
    }
    expect(await keys()).toBe(before);
  });

  it('seals stored responses under the server secret and the client key together', async () => {
    const key = 'sealed-response-000000001';
    const res = await app.request
      .post('/api/registry/register')
      .set('Idempotency-Key', key)
      .send({ name: 'sealed', walletPublicKey: newWallet().publicKey })
      .expect(201);
    const rows = (await app.deps.db('idempotency_keys').whereNotNull('response_status')) as Array<{
      scope: string;
      key: string;
      response_body: string;
    }>;
    const dump = JSON.stringify(rows);
    expect(dump).not.toContain(res.body.apiKey);
    expect(dump).not.toContain(key);
    // A dump plus the client's key alone (no server secret) opens none of them.
    for (const row of rows) {
      const clientOnly = Buffer.from(
        hkdfSync('sha256', key, row.scope, 'proof-exchange idempotent response/v2', 32),
      );
      expect(() => open(clientOnly, row.scope, Buffer.from(String(row.response_body), 'base64'))).toThrow();
    }
  });
});
