// Agreements with real ed25519 wallets: terms hashed canonically, accepted only by the counterparty's
// registered key over that hash; expiry, double acceptance and tampering each refused with its code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../shared/platform/canonical';
import { sha256Hex } from '../../shared/platform/crypto';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { expectProblem, newWallet, registerAgent } from './fixtures';
import type { TestAgent } from './fixtures';

let app: TestApp;
let alice: TestAgent;
let bob: TestAgent;
let carol: TestAgent;

beforeAll(async () => {
  app = testApp();
  alice = await registerAgent(app, { name: 'Alice' });
  bob = await registerAgent(app, { name: 'Bob' });
  carol = await registerAgent(app, { name: 'Carol' });
});
afterAll(() => app.close());

const inDays = (d: number) => new Date(Date.now() + d * 86_400_000).toISOString();

async function propose(extra: Record<string, unknown> = {}) {
  const res = await app.request
    .post('/api/agreements')
    .set(alice.auth)
    .send({
      counterpartyAgentId: bob.id,
      service: 'attest.batch',
      priceUsdCents: 2500,
      asset: 'USDC-SOL',
      deadline: inDays(3),
      sla: { deliveryWithinSeconds: 3600, availabilityBps: 9990 },
      ...extra,
    })
    .expect(201);
  return res.body.agreement as {
    id: string;
    status: string;
    termsHash: string;
    terms: Record<string, unknown>;
  };
}

describe('createAgreement and getAgreement', () => {
  it('stores the terms with the sha256 of their canonical JSON, readable by both parties only', async () => {
    const agreement = await propose();
    expect(agreement.id).toMatch(/^agr_/);
    expect(agreement.status).toBe('proposed');
    expect(agreement.termsHash).toBe(sha256Hex(canonicalJson(agreement.terms)));
    expect(agreement.terms).toMatchObject({
      proposer: { agentId: alice.id, walletPublicKey: alice.wallet.publicKey },
      counterparty: { agentId: bob.id, walletPublicKey: bob.wallet.publicKey },
      price: { usdCents: 2500, asset: 'USDC-SOL' },
      sla: { deliveryWithinSeconds: 3600, availabilityBps: 9990 },
    });
    for (const who of [alice, bob]) {
      const got = await app.request.get(`/api/agreements/${agreement.id}`).set(who.auth).expect(200);
      expect(got.body.agreement.termsHash).toBe(agreement.termsHash);
    }
    expectProblem(await app.request.get(`/api/agreements/${agreement.id}`).set(carol.auth), 404, 'not_found');
    expectProblem(await app.request.get(`/api/agreements/${agreement.id}`), 401, 'unauthorized');
    expectProblem(
      await app.request.get('/api/agreements/agr_nope').set(alice.auth),
      400,
      'validation_failed',
    );
  });

  it('lets a proposer sign the terms it computed itself', async () => {
    const nonce = 'fixed-nonce-0123456789';
    const deadline = inDays(2);
    const expiresAt = inDays(1);
    const terms = {
      type: 'proof-exchange.agreement/v1',
      proposer: { agentId: alice.id, walletPublicKey: alice.wallet.publicKey },
      counterparty: { agentId: bob.id, walletPublicKey: bob.wallet.publicKey },
      service: 'translation',
      price: { usdCents: 100, asset: 'SOL' },
      deadline,
      sla: {},
      expiresAt,
      nonce,
    };
    const hash = sha256Hex(canonicalJson(terms));
    const agreement = await propose({
      service: 'translation',
      priceUsdCents: 100,
      asset: 'SOL',
      deadline,
      expiresAt,
      sla: {},
      nonce,
      proposerSignature: alice.wallet.sign(hash),
    });
    expect(agreement.termsHash).toBe(hash);
    const got = await app.request.get(`/api/agreements/${agreement.id}`).set(bob.auth).expect(200);
    expect(got.body.agreement.signatures.proposer.publicKey).toBe(alice.wallet.publicKey);
    // The same terms again (same nonce) are one agreement, not two.
    expectProblem(
      await app.request.post('/api/agreements').set(alice.auth).send({
        counterpartyAgentId: bob.id,
        service: 'translation',
        priceUsdCents: 100,
        asset: 'SOL',
        deadline,
        expiresAt,
        nonce,
      }),
      409,
      'agreement_exists',
    );
  });

  it('refuses bad proposals', async () => {
    const base = {
      counterpartyAgentId: bob.id,
      service: 's',
      priceUsdCents: 1,
      asset: 'BTC',
      deadline: inDays(1),
    };
    const send = (body: Record<string, unknown>, auth = alice.auth) =>
      app.request.post('/api/agreements').set(auth).send(body);
    expectProblem(await app.request.post('/api/agreements').send(base), 401, 'unauthorized');
    expectProblem(await send({ ...base, counterpartyAgentId: alice.id }), 422, 'invalid_counterparty');
    expectProblem(
      await send({ ...base, counterpartyAgentId: `agt_${'0'.repeat(26)}` }),
      422,
      'counterparty_not_found',
    );
    expectProblem(
      await send({ ...base, deadline: new Date(Date.now() - 1000).toISOString() }),
      422,
      'deadline_passed',
    );
    expectProblem(await send({ ...base, expiresAt: inDays(2) }), 422, 'invalid_expiry');
    expectProblem(await send({ ...base, asset: 'DOGE' }), 400, 'validation_failed');
    expectProblem(await send({ ...base, priceUsdCents: 1.5 }), 400, 'validation_failed');
    expectProblem(await send({ ...base, sla: { uptime: 'lots' } }), 400, 'validation_failed');
    expectProblem(
      await send({ ...base, proposerSignature: bob.wallet.sign('x'.repeat(64)) }),
      422,
      'signature_invalid',
    );
    // Nothing was written by any of them.
    expect(await app.deps.db('agreements').whereRaw("terms->>'service' = 's'")).toEqual([]);
  });
});

describe('acceptAgreement', () => {
  it('accepts with the counterparty wallet signature over the terms hash, once', async () => {
    const a = await propose();
    const signature = bob.wallet.sign(a.termsHash);
    const res = await app.request
      .post(`/api/agreements/${a.id}/accept`)
      .set(bob.auth)
      .send({ termsHash: a.termsHash, signature })
      .expect(200);
    expect(res.body.agreement.status).toBe('accepted');
    expect(res.body.agreement.signatures.counterparty).toEqual({
      agentId: bob.id,
      publicKey: bob.wallet.publicKey,
      signature,
    });
    expect(res.body.agreement.acceptedAt).toBeTruthy();
    expectProblem(
      await app.request
        .post(`/api/agreements/${a.id}/accept`)
        .set(bob.auth)
        .send({ termsHash: a.termsHash, signature }),
      409,
      'agreement_already_accepted',
    );
  });

  it('refuses the wrong signer, the wrong caller, a wrong hash, tampered terms and expired offers', async () => {
    const a = await propose();
    const accept = (body: Record<string, unknown>, who: TestAgent = bob) =>
      app.request.post(`/api/agreements/${a.id}/accept`).set(who.auth).send(body);

    // Signed by another key (the proposer's, a stranger's), or over something else.
    expectProblem(
      await accept({ termsHash: a.termsHash, signature: alice.wallet.sign(a.termsHash) }),
      422,
      'signature_invalid',
    );
    expectProblem(
      await accept({ termsHash: a.termsHash, signature: newWallet().sign(a.termsHash) }),
      422,
      'signature_invalid',
    );
    expectProblem(
      await accept({ termsHash: a.termsHash, signature: bob.wallet.sign(`${a.termsHash}x`) }),
      422,
      'signature_invalid',
    );
    expectProblem(await accept({ termsHash: a.termsHash, signature: 'abc' }), 400, 'validation_failed');
    // Not the counterparty (even with a valid signature of its own), or no key at all.
    expectProblem(
      await accept({ termsHash: a.termsHash, signature: alice.wallet.sign(a.termsHash) }, alice),
      403,
      'not_counterparty',
    );
    expectProblem(
      await accept({ termsHash: a.termsHash, signature: carol.wallet.sign(a.termsHash) }, carol),
      403,
      'not_counterparty',
    );
    expectProblem(
      await app.request
        .post(`/api/agreements/${a.id}/accept`)
        .send({ termsHash: a.termsHash, signature: 'x' }),
      401,
      'unauthorized',
    );
    // The counterparty signed other terms than the stored ones.
    const otherHash = sha256Hex('other terms');
    expectProblem(
      await accept({ termsHash: otherHash, signature: bob.wallet.sign(otherHash) }),
      409,
      'terms_hash_mismatch',
    );
    // The stored terms were altered after proposal: the hash no longer matches them.
    const terms = { ...a.terms, price: { usdCents: 1, asset: 'USDC-SOL' } };
    await app.deps
      .db('agreements')
      .where({ id: a.id })
      .update({ terms: JSON.stringify(terms) });
    expectProblem(
      await accept({ termsHash: a.termsHash, signature: bob.wallet.sign(a.termsHash) }),
      409,
      'terms_hash_mismatch',
    );
    await app.deps
      .db('agreements')
      .where({ id: a.id })
      .update({ terms: JSON.stringify(a.terms) });
    // Past its expiry the offer is expired (and reads as such).
    await app.deps
      .db('agreements')
      .where({ id: a.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    expectProblem(
      await accept({ termsHash: a.termsHash, signature: bob.wallet.sign(a.termsHash) }),
      409,
      'agreement_expired',
    );
    const got = await app.request.get(`/api/agreements/${a.id}`).set(alice.auth).expect(200);
    expect(got.body.agreement.status).toBe('expired');
    expect(got.body.agreement.signatures.counterparty).toBeNull();
    expectProblem(
      await app.request
        .post(`/api/agreements/agr_${'0'.repeat(26)}/accept`)
        .set(bob.auth)
        .send({
          termsHash: a.termsHash,
          signature: bob.wallet.sign(a.termsHash),
        }),
      404,
      'not_found',
    );
  });
});
