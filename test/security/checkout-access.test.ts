// An id names a checkout or a gate request; only its client secret (cs_… / gs_…, returned once by
// prepare) opens it. The attacker of this file knows the victim's ids (as if it had guessed them from
// its own), holds capabilities of its own, and sends a real transfer: it reads nothing, changes
// nothing, and never sees the license key that the victim reads with its secret. At rest there is no
// license key and no client secret: the license row keeps the key's hash, and the key is sealed to
// a key only the client secret derives.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChain } from '../payments/ganache';
import type { Chain } from '../payments/ganache';
import type { LicenseRow } from '../../shared/licensing/rows';
import type { TestApp } from '../helpers';
import { captureLogs, expectProblem, testCheckoutsWorker, trialProof } from '../licensing/helpers';

const chain: Chain = await startChain(1337);
const [payer, treasury] = chain.accounts as [string, string];
const usdc = await chain.deployToken(6, 10n ** 15n);
Object.assign(process.env, {
  EVM_RPC_URL: chain.url,
  EVM_CONFIRMATIONS: '2',
  CHAIN_RPC_RETRIES: '0',
  CHAIN_RPC_TIMEOUT_MS: '2000',
  TREASURY_EVM: treasury,
  ASSETS_JSON: JSON.stringify({
    ETH: { network: 'eip155:1337' },
    'USDC-ETH': { network: 'eip155:1337', contract: usdc },
  }),
  RATES_USD: 'ETH=2000',
  PAYMENT_RECHECK_MS: '100',
  PAYMENT_RECHECK_MAX_MS: '300',
  LICENSE_PRICES_USD_CENTS: 'Starter=4900',
});

const { behindProxy, eventually, testApp } = await import('../helpers');
const { newCapability } = await import('../../shared/platform/capabilities');
const { sha256Hex } = await import('../../shared/platform/crypto');
const { signLicense } = await import('../../shared/licensing/license-token');
const { serviceSigningKey } = await import('../../shared/platform/keys');

let app: TestApp;
let attacker: ReturnType<typeof behindProxy>;
let worker: Awaited<ReturnType<typeof testCheckoutsWorker>>;
let logs: Awaited<ReturnType<typeof captureLogs>>;
beforeAll(async () => {
  logs = await captureLogs();
  app = testApp();
  attacker = behindProxy(app);
  worker = await testCheckoutsWorker();
});
afterAll(async () => {
  logs?.stop();
  await worker?.close();
  await app?.close();
  await chain.close();
});

const ATTACKER_ADDRESS = '203.0.113.66';
const checkoutBase = '/api/v1/commercial/checkout';
const gateBase = '/api/v1/payment-gate/random';
const db = () => app.deps.db;
const count = async (table: string) => Number((await db()(table).count({ n: '*' }))[0]!.n);
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** Everything the attacker was answered, to search for what it must never see. */
const attackerReplies: string[] = [];
const asAttacker = <T extends { set(name: string, value: string): T }>(req: T) =>
  req.set('X-Forwarded-For', ATTACKER_ADDRESS);
async function attack(req: PromiseLike<{ status: number; body: unknown; headers: Record<string, string> }>) {
  const res = await req;
  attackerReplies.push(JSON.stringify({ headers: res.headers, body: res.body }));
  return res as { status: number; headers: Record<string, string>; body: Record<string, unknown> };
}

/** Every row of every table as JSON lines: what a database dump holds. */
async function dumpDatabase(): Promise<string> {
  const tables = (await db()('pg_tables').where({ schemaname: 'public' }).pluck('tablename')) as string[];
  const parts: string[] = [];
  for (const table of tables) {
    const { rows } = await db().raw(`select row_to_json(t)::text as j from "${table}" t`);
    parts.push(`-- ${table}`, ...(rows as Array<{ j: string }>).map((r) => r.j));
  }
  return parts.join('\n');
}

/** The 404 a checkout that does not exist answers, with the id taken out. */
const notFoundShape = (body: Record<string, unknown>, id: string) => ({
  ...body,
  detail: String(body.detail).replace(id, '<id>'),
  instance: undefined,
});

interface Prepared {
  id: string;
  secret: string;
  amount: bigint;
}

async function prepareStarter(organization: string): Promise<Prepared> {
  const res = await app.request
    .post(`${checkoutBase}/prepare`)
    .send({ license: 'Starter', asset: 'USDC-ETH', organization, email: 'victim@example.test' });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body.clientSecret).toMatch(/^cs_[A-Za-z0-9_-]{43}$/);
  return {
    id: res.body.checkout.id,
    secret: res.body.clientSecret,
    amount: BigInt(res.body.checkout.payment.amount),
  };
}

describe('a checkout', () => {
  const victim: Prepared[] = [];
  let own: Prepared;
  let trial: { id: string; secret: string; token: string };
  let paidKey: string;
  let junkTx: string;
  let otherKindSecret: string;
  const ghost = 'chk_01m7ycenb0y37det98dds34qjx';

  /** Every way the attacker tries to read or pay each of the victim's checkouts; each answers 404. */
  async function attackCheckouts(ids: string[]) {
    const absent = await attack(asAttacker(attacker.get(`${checkoutBase}/status?checkoutId=${ghost}`)));
    expectProblem(absent, 404, 'not_found');
    const wrongSecrets: Array<Record<string, string>> = [
      {},
      bearer(newCapability('checkout').token), // well-formed, random
      bearer(`cs_${'A'.repeat(43)}`),
      bearer(own.secret), // a real secret, of the attacker's own checkout
      bearer(otherKindSecret), // a real gate secret
      bearer(own.secret.slice(0, -1)),
    ];
    for (const id of ids) {
      for (const auth of wrongSecrets) {
        const read = await attack(
          asAttacker(attacker.get(`${checkoutBase}/status?checkoutId=${id}`)).set(auth),
        );
        expectProblem(read, 404, 'not_found');
        // The same answer as for a checkout that does not exist.
        expect(notFoundShape(read.body, id)).toEqual(notFoundShape(absent.body, ghost));
        const pay = await attack(
          asAttacker(attacker.post(`${checkoutBase}/verify`))
            .set(auth)
            .send({ checkoutId: id, txRef: junkTx }),
        );
        expectProblem(pay, 404, 'not_found');
      }
    }
  }

  it('opens only with its client secret: the attacker who knows the ids reads and pays nothing', async () => {
    // The attacker makes free jobs while the victim prepares five checkouts.
    const [jobs, prepared] = await Promise.all([
      Promise.all(
        Array.from({ length: 8 }, () =>
          asAttacker(attacker.post('/api/jobs'))
            .send({ service: 'attest.timestamp', input: { digest: 'ab'.repeat(32) } })
            .expect(202),
        ),
      ),
      Promise.all(Array.from({ length: 5 }, (_, i) => prepareStarter(`Victim Corp ${i}`))),
    ]);
    expect(jobs).toHaveLength(8);
    victim.push(...prepared);
    own = await prepareStarter('Attacker Holdings');
    const gate = await asAttacker(attacker.post(`${gateBase}/prepare`))
      .send({ asset: 'ETH', baseAmount: '5' })
      .expect(201);
    otherKindSecret = gate.body.clientSecret;
    // A real transfer of the attacker's, paying the first victim checkout's exact amount.
    junkTx = await chain.transferToken(usdc, payer, treasury, victim[0]!.amount);
    await chain.mine(2);
    // One of them is past its window: even its expiry is not the attacker's to write.
    await db()('checkouts')
      .where({ id: victim[4]!.id })
      .update({ expires_at: new Date(Date.now() - 3 * 3600_000) });

    const ids = victim.map((v) => v.id);
    const before = await db()('checkouts').whereIn('id', ids).orderBy('id');
    const claims = await count('payment_claims');
    await attackCheckouts(ids);
    expect(await db()('checkouts').whereIn('id', ids).orderBy('id')).toEqual(before);
    expect(await count('payment_claims')).toBe(claims);
    expect((await db()('checkouts').where({ id: victim[4]!.id }).first()).status).toBe('awaiting_payment');

    // The victim, with its secret, reads its checkouts (and sees the overdue one expire).
    for (const v of victim) {
      const res = await app.request
        .get(`${checkoutBase}/status?checkoutId=${v.id}`)
        .set(bearer(v.secret))
        .expect(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.body.checkout.status).toBe(v === victim[4] ? 'expired' : 'awaiting_payment');
      expect(JSON.stringify(res.body)).not.toContain(v.secret);
    }
    // One checkout's secret opens no other checkout of the same buyer.
    expectProblem(
      await app.request
        .get(`${checkoutBase}/status?checkoutId=${victim[1]!.id}`)
        .set(bearer(victim[0]!.secret)),
      404,
      'not_found',
    );
  });

  it('shows its license key to the victim who paid, and to no one else', async () => {
    const v = victim[0]!;
    const tx = await chain.transferToken(usdc, payer, treasury, v.amount);
    await chain.mine(2);
    await app.request
      .post(`${checkoutBase}/verify`)
      .set(bearer(v.secret))
      .send({ checkoutId: v.id, txRef: tx })
      .expect(202);
    const done = await eventually(async () => {
      const res = await app.request
        .get(`${checkoutBase}/status?checkoutId=${v.id}`)
        .set(bearer(v.secret))
        .expect(200);
      return res.body.checkout.status === 'confirmed' ? res.body.checkout : undefined;
    }, 15_000);
    paidKey = done.license.token;
    expect(paidKey).toMatch(/^lk_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    // Read again, the same key (opened from its sealed copy each time).
    const again = await app.request
      .get(`${checkoutBase}/status?checkoutId=${v.id}`)
      .set(bearer(v.secret))
      .expect(200);
    expect(again.body.checkout.license.token).toBe(paidKey);
    // It works as a Bearer key.
    const entitlements = await app.request.get('/api/v1/commercial/license').set(bearer(paidKey)).expect(200);
    expect(entitlements.body).toMatchObject({ licenseId: done.license.id, tier: 'Starter' });

    // The attacker, after issuance: still nothing, and nothing written.
    const ids = victim.map((x) => x.id);
    const before = await db()('checkouts').whereIn('id', ids).orderBy('id');
    const licenses = await db()('licenses').orderBy('id');
    const claims = await count('payment_claims');
    await attackCheckouts(ids);
    expect(await db()('checkouts').whereIn('id', ids).orderBy('id')).toEqual(before);
    expect(await db()('licenses').orderBy('id')).toEqual(licenses);
    expect(await count('payment_claims')).toBe(claims);
    // The victim's transfer cannot be re-submitted to the attacker's own checkout either.
    expectProblem(
      await attack(
        asAttacker(attacker.post(`${checkoutBase}/verify`))
          .set(bearer(own.secret))
          .send({ checkoutId: own.id, txRef: tx }),
      ),
      409,
      'payment_already_claimed',
    );
  });

  it('shows a TRIAL key in the prepare reply and later only with the secret', async () => {
    const res = await app.request
      .post(`${checkoutBase}/prepare`)
      .send({
        license: 'TRIAL',
        organization: 'Victim Trial Org',
        email: 'victim@example.test',
        ...(await trialProof(app.request)),
      })
      .expect(201);
    trial = {
      id: res.body.checkout.id,
      secret: res.body.clientSecret,
      token: res.body.checkout.license.token,
    };
    expect(trial.token).toMatch(/^lk_/);
    const read = await app.request
      .get(`${checkoutBase}/status?checkoutId=${trial.id}`)
      .set(bearer(trial.secret))
      .expect(200);
    expect(read.body.checkout.license.token).toBe(trial.token);
    await app.request.get('/api/v1/commercial/license').set(bearer(trial.token)).expect(200);
    for (const auth of [{}, bearer(own.secret), bearer(newCapability('checkout').token)]) {
      expectProblem(
        await attack(asAttacker(attacker.get(`${checkoutBase}/status?checkoutId=${trial.id}`)).set(auth)),
        404,
        'not_found',
      );
    }
  });

  it('leaves no license key and no client secret in a database dump', async () => {
    const dump = await dumpDatabase();
    const secrets = [...victim.map((v) => v.secret), own.secret, trial.secret, otherKindSecret];
    // A bytea column dumps as hex: look for that spelling too.
    const spellings = (text: string) => [text, Buffer.from(text).toString('hex')];
    for (const token of [paidKey, trial.token]) {
      for (const t of spellings(token)) expect(dump).not.toContain(t);
      // Not even its signature, the part only the signing key makes.
      expect(dump).not.toContain(token.split('.')[1]!);
    }
    for (const secret of secrets) for (const t of spellings(secret.slice(3))) expect(dump).not.toContain(t);
    expect(dump).not.toMatch(/\blk_[A-Za-z0-9_-]{20,}/);
    // What is there: the hashes.
    expect(dump).toContain(sha256Hex(paidKey));
    expect(dump).toContain(sha256Hex(victim[0]!.secret));

    // Nothing in `select * from licenses` authenticates.
    const rows = (await db()('licenses')) as Array<Record<string, unknown>>;
    expect(rows.length).toBeGreaterThanOrEqual(2);
    const values = new Set<string>();
    for (const row of rows)
      for (const value of Object.values(row)) if (value !== null) values.add(String(value));
    for (const value of values) {
      if (!/^\S+$/.test(value)) continue;
      const res = await app.request.get('/api/v1/commercial/license').set(bearer(value));
      expect(res.status, value).toBe(401);
    }
    // A row and the signing key do not give its key back: each key carries fresh randomness.
    const [row] = rows.filter((r) => r.checkout_id === victim[0]!.id) as unknown as LicenseRow[];
    const recomputed = signLicense(
      {
        licenseId: row!.id,
        checkoutId: row!.checkout_id,
        tier: row!.tier,
        organization: row!.organization,
        periodDays: row!.period_days,
        issuedAt: new Date(row!.issued_at).toISOString(),
        expiresAt: new Date(row!.expires_at).toISOString(),
      },
      serviceSigningKey(),
    );
    expect(sha256Hex(recomputed)).not.toBe(row!.token_hash);
    expectProblem(
      await app.request.get('/api/v1/commercial/license').set(bearer(recomputed)),
      401,
      'unauthorized',
    );
  });

  it('never shows the attacker a key or a secret, nor writes one to a log line', () => {
    const seen = attackerReplies.join('\n');
    for (const s of [paidKey, trial.token, ...victim.map((v) => v.secret), trial.secret]) {
      expect(seen).not.toContain(s);
      expect(logs.lines.join('\n')).not.toContain(s);
    }
  });
});

describe('a payment-gate request', () => {
  it('opens only with its client secret; the attacker reads, verifies and writes nothing', async () => {
    const res = await app.request.post(`${gateBase}/prepare`).send({ asset: 'USDC-ETH', baseAmount: '3000' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const request = res.body.request;
    const secret = res.body.clientSecret as string;
    expect(secret).toMatch(/^gs_[A-Za-z0-9_-]{43}$/);
    const own = (
      await asAttacker(attacker.post(`${gateBase}/prepare`)).send({ asset: 'USDC-ETH', baseAmount: '3000' })
    ).body.clientSecret as string;
    const checkoutSecret = (await prepareStarter('Gate Victim')).secret;
    // A real transfer of the request's exact amount, which the attacker tries to claim it with.
    const tx = await chain.transferToken(usdc, payer, treasury, BigInt(request.amount));
    await chain.mine(2);

    const before = await db()('payment_gate_requests').where({ id: request.id }).first();
    const claims = await count('payment_claims');
    const absent = await attack(
      asAttacker(attacker.get(`${gateBase}/status?requestId=gate_01m7ycenb0y37det98dds34qjx`)),
    );
    for (const auth of [
      {},
      bearer(newCapability('gate').token),
      bearer(own),
      bearer(checkoutSecret),
      bearer(secret.replace(/^gs_/, 'cs_')),
    ]) {
      const read = await attack(
        asAttacker(attacker.get(`${gateBase}/status?requestId=${request.id}`)).set(auth),
      );
      expectProblem(read, 404, 'not_found');
      expect(notFoundShape(read.body, request.id)).toEqual(
        notFoundShape(absent.body, 'gate_01m7ycenb0y37det98dds34qjx'),
      );
      expectProblem(
        await attack(
          asAttacker(attacker.post(`${gateBase}/verify`))
            .set(auth)
            .send({ requestId: request.id, txRef: tx }),
        ),
        404,
        'not_found',
      );
    }
    expect(await db()('payment_gate_requests').where({ id: request.id }).first()).toEqual(before);
    expect(await count('payment_claims')).toBe(claims);

    // The holder reads it and verifies the transfer that pays it.
    const read = await app.request
      .get(`${gateBase}/status?requestId=${request.id}`)
      .set(bearer(secret))
      .expect(200);
    expect(read.body.request).toMatchObject({ id: request.id, status: 'open' });
    const matched = await app.request
      .post(`${gateBase}/verify`)
      .set(bearer(secret))
      .send({ requestId: request.id, txRef: tx })
      .expect(200);
    expect(matched.body.verification).toMatchObject({ matched: true });

    const dump = await dumpDatabase();
    expect(dump).not.toContain(secret.slice(3));
    expect(dump).not.toContain(own.slice(3));
    expect(dump).toContain(sha256Hex(secret));
    expect(attackerReplies.join('\n')).not.toContain(secret);
  });
});
