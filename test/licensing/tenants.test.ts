// Tenants: an organization's scoped API keys (a read key never writes, a revoked key is refused at
// once, a key is shown once), the operator's administration of licenses (suspend, resume, rotate,
// revoke; each action audited), organizations' own lists that never show another's, the public workflow
// status without a per-tenant figure, and `npm run admin` against a real server.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { runAdmin } from '../../cli/admin';
import { bearer, behindProxy, grantLicense, testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { wallet } from '../governance/helpers';
import { expectProblem } from './helpers';

const OPERATOR = bearer('op_test_token_0123456789');
let app: TestApp;

beforeAll(() => {
  app = testApp();
});
afterAll(async () => {
  await app.close();
});

const count = async (table: string) => Number((await app.deps.db(table).count('* as n'))[0]!.n);

async function makeKey(auth: { Authorization: string }, scopes: string[], name = 'ci') {
  const res = await app.request.post('/api/v1/organization/keys').set(auth).send({ name, scopes });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return {
    keyId: res.body.key.keyId as string,
    key: res.body.apiKey as string,
    auth: bearer(res.body.apiKey),
  };
}

const makeRoom = (auth: { Authorization: string }, name = 'Board') =>
  app.request.post('/api/governance/rooms').set(auth).send({ name });

describe('organization API keys', () => {
  it('a read key reads but never writes: 403 insufficient_scope and nothing written', async () => {
    const org = await grantLicense(app.deps.db, 'Business');
    const reader = await makeKey(org.auth, ['read']);
    expect(reader.key).toMatch(/^rk_[A-Za-z0-9_-]{43}$/);
    const rooms = await count('rooms');
    const refused = await makeRoom(reader.auth);
    expectProblem(refused, 403, 'insufficient_scope');
    expect(await count('rooms')).toBe(rooms);
    // Nor a workflow, nor a key of its own.
    expectProblem(
      await app.request
        .post('/api/proof-workflows/prepare')
        .set(reader.auth)
        .send({ template: 'Grant Review' }),
      403,
      'insufficient_scope',
    );
    expectProblem(
      await app.request
        .post('/api/v1/organization/keys')
        .set(reader.auth)
        .send({ name: 'x', scopes: ['admin'] }),
      403,
      'insufficient_scope',
    );
    // It reads every line: the organization's lists and the license.
    await app.request.get('/api/governance/rooms').set(reader.auth).expect(200);
    await app.request.get('/api/proof-workflows').set(reader.auth).expect(200);
    const license = await app.request.get('/api/v1/commercial/license').set(reader.auth).expect(200);
    expect(license.body.licenseId).toBe(org.id);
  });

  it('a line key writes its own line only; an admin key does everything', async () => {
    const org = await grantLicense(app.deps.db, 'Business');
    const governance = await makeKey(org.auth, ['governance']);
    await makeRoom(governance.auth).expect(201);
    expectProblem(
      await app.request
        .post('/api/proof-workflows/prepare')
        .set(governance.auth)
        .send({ template: 'Grant Review' }),
      403,
      'insufficient_scope',
    );
    // Reads of another line need `read`.
    expectProblem(
      await app.request.get('/api/proof-workflows').set(governance.auth),
      403,
      'insufficient_scope',
    );
    const admin = await makeKey(org.auth, ['admin', 'read']);
    await app.request
      .post('/api/proof-workflows/prepare')
      .set(admin.auth)
      .send({ template: 'Grant Review' })
      .expect(201);
    const made = await makeKey(admin.auth, ['auctions']);
    expect(made.key).toMatch(/^rk_/);
    // The audit names the key that acted, not the license alone.
    const audit = await app.request.get(`/api/v1/admin/audit?licenseId=${org.id}`).set(OPERATOR).expect(200);
    expect(audit.body.items[0]).toMatchObject({
      actor: `key:${admin.keyId}`,
      action: 'organization_key.create',
      target: made.keyId,
    });
  });

  it('shows a key once: the list has a prefix, never the key, and keys of one organization only', async () => {
    const org = await grantLicense(app.deps.db, 'Business');
    const other = await grantLicense(app.deps.db, 'Business');
    const k = await makeKey(org.auth, ['workflows'], 'deploy bot');
    await makeKey(other.auth, ['read'], 'theirs');
    const list = await app.request.get('/api/v1/organization/keys').set(org.auth).expect(200);
    expect(JSON.stringify(list.body)).not.toContain(k.key);
    expect(JSON.stringify(list.body)).not.toContain(k.key.slice(12));
    expect(list.body.items).toHaveLength(1);
    expect(list.body.items[0]).toMatchObject({
      keyId: k.keyId,
      name: 'deploy bot',
      scopes: ['workflows'],
      prefix: `${k.key.slice(0, 11)}…`,
      revokedAt: null,
    });
    // Nothing else reveals it again either: not the database, not the operator's audit.
    const row = await app.deps.db('organization_keys').where({ id: k.keyId }).first();
    expect(JSON.stringify(row)).not.toContain(k.key);
    const audit = await app.request.get(`/api/v1/admin/audit?licenseId=${org.id}`).set(OPERATOR).expect(200);
    expect(JSON.stringify(audit.body)).not.toContain(k.key);
    expect(audit.body.items[0]).toMatchObject({
      actor: `license:${org.id}`,
      action: 'organization_key.create',
    });
    // The other organization cannot revoke it (404, as for a key that does not exist).
    expectProblem(
      await app.request.post(`/api/v1/organization/keys/${k.keyId}/revoke`).set(other.auth),
      404,
      'not_found',
    );
  });

  it('a revoked key is refused from the very next request', async () => {
    const org = await grantLicense(app.deps.db, 'Business');
    const k = await makeKey(org.auth, ['governance']);
    await app.request.get('/api/governance/rooms').set(k.auth).expect(200);
    const revoked = await app.request
      .post(`/api/v1/organization/keys/${k.keyId}/revoke`)
      .set(org.auth)
      .expect(200);
    expect(revoked.body.revokedAt).toEqual(expect.any(String));
    const again = await app.request
      .post(`/api/v1/organization/keys/${k.keyId}/revoke`)
      .set(org.auth)
      .expect(200);
    expect(again.body.revokedAt).toBe(revoked.body.revokedAt);
    expectProblem(await app.request.get('/api/governance/rooms').set(k.auth), 401, 'key_revoked');
    const rooms = await count('rooms');
    expectProblem(await makeRoom(k.auth), 401, 'key_revoked');
    expect(await count('rooms')).toBe(rooms);
  });

  it('is refused at once by every web process, not only the one that revoked it', async () => {
    // A second web process with its own pool and Redis connection, as a deployment runs several.
    const other = testApp();
    try {
      const org = await grantLicense(app.deps.db, 'Business');
      const k = await makeKey(org.auth, ['governance']);
      await other.request.get('/api/governance/rooms').set(k.auth).expect(200);
      await other.request.get('/api/governance/rooms').set(org.auth).expect(200);
      await app.request.post(`/api/v1/organization/keys/${k.keyId}/revoke`).set(org.auth).expect(200);
      expectProblem(await other.request.get('/api/governance/rooms').set(k.auth), 401, 'key_revoked');
      // The operator suspends the license on one process: the other refuses it and its keys next.
      const k2 = await makeKey(org.auth, ['governance']);
      await other.request.get('/api/governance/rooms').set(k2.auth).expect(200);
      await app.request.post(`/api/v1/admin/licenses/${org.id}/suspend`).set(OPERATOR).expect(200);
      expectProblem(await other.request.get('/api/governance/rooms').set(org.auth), 401, 'license_suspended');
      expectProblem(await other.request.get('/api/governance/rooms').set(k2.auth), 401, 'license_suspended');
      await app.request.post(`/api/v1/admin/licenses/${org.id}/revoke`).set(OPERATOR).expect(200);
      const rooms = await count('rooms');
      expectProblem(
        await other.request.post('/api/governance/rooms').set(k2.auth).send({ name: 'x' }),
        401,
        'license_revoked',
      );
      expect(await count('rooms')).toBe(rooms);
    } finally {
      await other.close();
    }
  });

  it('can do no more than its license, and replays no other key’s answer', async () => {
    const starter = await grantLicense(app.deps.db, 'Starter');
    const admin = await makeKey(starter.auth, ['admin']);
    // Starter grants workflows only: an admin key of it still cannot use governance.
    expectProblem(await makeRoom(admin.auth), 403, 'license_product_not_included');
    // The same Idempotency-Key from another key of the organization is a new request, not a replay.
    const body = { name: 'twin', scopes: ['read'] };
    const first = await app.request
      .post('/api/v1/organization/keys')
      .set(starter.auth)
      .set('Idempotency-Key', 'tenants-idem-key-0001')
      .send(body)
      .expect(201);
    const again = await app.request
      .post('/api/v1/organization/keys')
      .set(starter.auth)
      .set('Idempotency-Key', 'tenants-idem-key-0001')
      .send(body)
      .expect(201);
    expect(again.body.apiKey).toBe(first.body.apiKey);
    const other = await app.request
      .post('/api/v1/organization/keys')
      .set(admin.auth)
      .set('Idempotency-Key', 'tenants-idem-key-0001')
      .send(body)
      .expect(201);
    expect(other.body.apiKey).not.toBe(first.body.apiKey);
    // The operator holds no license: it has no keys of its own to manage.
    expectProblem(
      await app.request.post('/api/v1/organization/keys').set(OPERATOR).send(body),
      400,
      'license_required',
    );
  });

  it('over A2A an organization key needs admin: a read key creates no task', async () => {
    const org = await grantLicense(app.deps.db, 'Business');
    const reader = await makeKey(org.auth, ['read']);
    const jobs = await count('jobs');
    const res = await app.request
      .post('/a2a/jsonrpc')
      .set(reader.auth)
      .set('A2A-Version', '1.0')
      .send({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: {
          message: {
            messageId: 'b7c1a0de-0000-4000-8000-000000000001',
            role: 'ROLE_USER',
            parts: [{ data: { service: 'attest.timestamp', input: { digest: 'ab'.repeat(32) } } }],
          },
        },
      });
    expectProblem(res, 403, 'insufficient_scope');
    expect(await count('jobs')).toBe(jobs);
  });

  it('records when a key was last used, at most once a minute', async () => {
    const org = await grantLicense(app.deps.db, 'Business');
    const k = await makeKey(org.auth, ['read']);
    await app.request.get('/api/governance/rooms').set(k.auth).expect(200);
    const first = await eventuallyUsed(k.keyId);
    await app.request.get('/api/governance/rooms').set(k.auth).expect(200);
    await app.request.get('/api/governance/rooms').set(k.auth).expect(200);
    const row = await app.deps.db('organization_keys').where({ id: k.keyId }).first();
    expect(new Date(row.last_used_at).getTime()).toBe(first);
  });
});

async function eventuallyUsed(keyId: string): Promise<number> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const row = await app.deps.db('organization_keys').where({ id: keyId }).first();
    if (row.last_used_at) return new Date(row.last_used_at).getTime();
    if (Date.now() > deadline) throw new Error('last_used_at never set');
    await new Promise((r) => setTimeout(r, 20));
  }
}

// Grants follow their grantor: a thief holding a leaked license key mints an admin key, which mints
// another, and orders jobs for their capabilities; the documented answer (rotate the license, revoke
// the key) must leave him nothing that still answers.
describe('grants follow their grantor', () => {
  // The thief's requests come from a network of their own (through a trusted proxy hop), so the
  // failures they meet spend that network's failure budget, not the one the rest of this file uses.
  let net = 0;
  let thief: ReturnType<typeof behindProxy>;
  let from = '';
  beforeEach(() => {
    thief = behindProxy(app);
    from = `203.0.113.${++net}`;
  });
  const as = <T extends { set(h: string, v: string): T }>(req: T) => req.set('X-Forwarded-For', from);
  const order = (auth: { Authorization: string }) =>
    app.request
      .post('/api/jobs')
      .set(auth)
      .send({ service: 'attest.timestamp', input: { digest: 'ab'.repeat(32) } })
      .expect(202)
      .then((r) => ({ id: r.body.job.id as string, capability: bearer(r.body.accessToken) }));
  const opens = async (job: { id: string; capability: { Authorization: string } }) =>
    (await as(thief.get(`/api/jobs/${job.id}`)).set(job.capability)).status;
  const audit = async (licenseId: string) =>
    (await app.request.get(`/api/v1/admin/audit?licenseId=${licenseId}&limit=100`).set(OPERATOR).expect(200))
      .body.items as Array<{
      actor: string;
      action: string;
      target: string;
      detail: Record<string, unknown>;
    }>;

  it('rotating the license key refuses every key it minted, and theirs, and their jobs’ capabilities', async () => {
    const org = await grantLicense(app.deps.db, 'Business');
    const stolen = await makeKey(org.auth, ['admin'], 'thief');
    const second = await makeKey(stolen.auth, ['admin'], 'second');
    const third = await makeKey(second.auth, ['read'], 'third');
    const byLicense = await order(org.auth);
    const byKey = await order(second.auth);
    expect(await opens(byLicense)).toBe(200);
    expect(await opens(byKey)).toBe(200);

    const rotated = await app.request
      .post(`/api/v1/admin/licenses/${org.id}/rotate`)
      .set(OPERATOR)
      .expect(200);
    const fresh = bearer(rotated.body.licenseKey);

    const keys = await count('organization_keys');
    const jobs = await count('jobs');
    for (const k of [stolen, second, third])
      expectProblem(await as(thief.get('/api/governance/rooms')).set(k.auth), 401, 'key_revoked');
    expectProblem(
      await as(thief.post('/api/v1/organization/keys'))
        .set(second.auth)
        .send({ name: 'x', scopes: ['admin'] }),
      401,
      'key_revoked',
    );
    expectProblem(
      await as(thief.post('/api/jobs'))
        .set(stolen.auth)
        .send({ service: 'attest.timestamp', input: { digest: 'cd'.repeat(32) } }),
      401,
      'key_revoked',
    );
    expect(await count('organization_keys')).toBe(keys);
    expect(await count('jobs')).toBe(jobs);
    // The capabilities those credentials were given open nothing; the organization still opens its jobs.
    expect(await opens(byLicense)).toBe(404);
    expect(await opens(byKey)).toBe(404);
    await app.request.get(`/api/jobs/${byKey.id}`).set(fresh).expect(200);

    // The new license key works, and so does what it mints.
    await app.request.get('/api/governance/rooms').set(fresh).expect(200);
    const unrelated = await makeKey(fresh, ['admin'], 'after rotation');
    await app.request.get('/api/governance/rooms').set(unrelated.auth).expect(200);
    expect(await opens(await order(unrelated.auth))).toBe(200);

    const cascade = (await audit(org.id)).filter((a) => a.detail.cascade === 'license.rotate');
    expect(
      cascade
        .filter((a) => a.action === 'organization_key.revoke')
        .map((a) => a.target)
        .sort(),
    ).toEqual([stolen.keyId, second.keyId, third.keyId].sort());
    expect(cascade.find((a) => a.target === third.keyId)).toMatchObject({
      actor: 'operator',
      detail: { mintedBy: `key:${second.keyId}` },
    });
    expect(cascade.find((a) => a.action === 'job_capability.revoke')).toMatchObject({
      target: `license:${org.id}`,
      detail: { jobs: 2 },
    });
    const listed = await app.request.get('/api/v1/organization/keys?limit=100').set(fresh).expect(200);
    const revoked = (listed.body.items as Array<{ keyId: string; revokedAt: string | null }>).filter(
      (k) => k.revokedAt,
    );
    expect(revoked.map((k) => k.keyId).sort()).toEqual([stolen.keyId, second.keyId, third.keyId].sort());
  });

  it('revoking a key refuses the keys it minted, and theirs, and their jobs’ capabilities; not its siblings', async () => {
    const org = await grantLicense(app.deps.db, 'Business');
    const parent = await makeKey(org.auth, ['admin'], 'parent');
    const child = await makeKey(parent.auth, ['admin'], 'child');
    const grandchild = await makeKey(child.auth, ['read'], 'grandchild');
    const sibling = await makeKey(org.auth, ['admin'], 'sibling');
    const childJob = await order(child.auth);
    const siblingJob = await order(sibling.auth);
    const licenseJob = await order(org.auth);

    await app.request.post(`/api/v1/organization/keys/${parent.keyId}/revoke`).set(org.auth).expect(200);
    const rooms = await count('rooms');
    for (const k of [parent, child, grandchild]) {
      expectProblem(await as(thief.get('/api/governance/rooms')).set(k.auth), 401, 'key_revoked');
      expectProblem(
        await as(thief.post('/api/governance/rooms')).set(k.auth).send({ name: 'Board' }),
        401,
        'key_revoked',
      );
    }
    expect(await count('rooms')).toBe(rooms);
    expect(await opens(childJob)).toBe(404);
    // What the license key and another key minted stays.
    await app.request.get('/api/governance/rooms').set(sibling.auth).expect(200);
    expect(await opens(siblingJob)).toBe(200);
    expect(await opens(licenseJob)).toBe(200);

    const cascade = (await audit(org.id)).filter((a) => a.detail.cascade === 'organization_key.revoke');
    expect(
      cascade
        .filter((a) => a.action === 'organization_key.revoke')
        .map((a) => a.target)
        .sort(),
    ).toEqual([child.keyId, grandchild.keyId].sort());
    expect(cascade.every((a) => a.actor === `license:${org.id}`)).toBe(true);
    expect(cascade.find((a) => a.action === 'job_capability.revoke')).toMatchObject({
      target: `key:${parent.keyId}`,
      detail: { jobs: 1 },
    });
  });

  it('a request authenticated just before the rotation mints nothing after it', async () => {
    const { createOrganizationKey } = await import('../../shared/licensing/keys');
    const { orderJob } = await import('../../shared/exchange/order');
    const org = await grantLicense(app.deps.db, 'Business');
    const key = await makeKey(org.auth, ['admin']);
    // The credentials as the requests resolved them, before the operator rotated the license.
    const asLicense = { licenseId: org.id, keyId: null, keyGeneration: 1 };
    const asKey = { licenseId: org.id, keyId: key.keyId, keyGeneration: 1 };
    await app.request.post(`/api/v1/admin/licenses/${org.id}/rotate`).set(OPERATOR).expect(200);
    const keys = await count('organization_keys');
    const jobs = await count('jobs');
    await expect(
      createOrganizationKey(app.deps.db, asLicense, { name: 'late', scopes: ['admin'] }),
    ).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
    await expect(
      createOrganizationKey(app.deps.db, asKey, { name: 'late', scopes: ['admin'] }),
    ).rejects.toMatchObject({
      status: 401,
      code: 'key_revoked',
    });
    for (const grantor of [asLicense, asKey]) {
      await expect(
        orderJob(
          app.deps.db,
          app.deps.queues,
          {
            agent: null,
            licenseId: org.id,
            grantor,
            holder: { key: `license:${org.id}`, kind: 'licensed', cap: undefined },
            base: 'http://x',
          },
          { service: 'attest.timestamp', input: { digest: 'ef'.repeat(32) } },
        ),
      ).rejects.toMatchObject({ status: 401 });
    }
    expect(await count('organization_keys')).toBe(keys);
    expect(await count('jobs')).toBe(jobs);
  });
});

describe('operator license administration', () => {
  it('issues a license by hand: the key once, listed without it, working at once', async () => {
    const expiresAt = new Date(Date.now() + 90 * 86_400_000).toISOString();
    const res = await app.request
      .post('/api/v1/admin/licenses')
      .set(OPERATOR)
      .send({ organization: 'Invoice Paid GmbH', tier: 'Business', expiresAt, note: 'INV-2026-0042' })
      .expect(201);
    const { license, licenseKey } = res.body;
    expect(licenseKey).toMatch(/^lk_/);
    expect(license).toMatchObject({
      organization: 'Invoice Paid GmbH',
      tier: 'Business',
      status: 'active',
      source: 'manual',
      note: 'INV-2026-0042',
      expiresAt,
    });
    const mine = await app.request.get('/api/v1/commercial/license').set(bearer(licenseKey)).expect(200);
    expect(mine.body).toMatchObject({ licenseId: license.licenseId, tier: 'Business' });
    const list = await app.request
      .get('/api/v1/admin/licenses?organization=invoice%20paid')
      .set(OPERATOR)
      .expect(200);
    expect(list.body.items.map((l: { licenseId: string }) => l.licenseId)).toEqual([license.licenseId]);
    expect(JSON.stringify(list.body)).not.toContain(licenseKey);
    const shown = await app.request
      .get(`/api/v1/admin/licenses/${license.licenseId}`)
      .set(OPERATOR)
      .expect(200);
    expect(JSON.stringify(shown.body)).not.toContain(licenseKey);
    // The operator routes take the operator token only.
    expectProblem(
      await app.request.get('/api/v1/admin/licenses').set(bearer(licenseKey)),
      401,
      'unauthorized',
    );
  });

  it('a suspended license is refused, with every key of its organization, and resumes', async () => {
    const org = await grantLicense(app.deps.db, 'Business');
    const k = await makeKey(org.auth, ['governance']);
    const suspended = await app.request
      .post(`/api/v1/admin/licenses/${org.id}/suspend`)
      .set(OPERATOR)
      .expect(200);
    expect(suspended.body.status).toBe('suspended');
    const rooms = await count('rooms');
    expectProblem(await makeRoom(org.auth), 401, 'license_suspended');
    expectProblem(await makeRoom(k.auth), 401, 'license_suspended');
    expectProblem(
      await app.request.get('/api/v1/commercial/license').set(org.auth),
      401,
      'license_suspended',
    );
    expect(await count('rooms')).toBe(rooms);
    await app.request.post(`/api/v1/admin/licenses/${org.id}/resume`).set(OPERATOR).expect(200);
    await makeRoom(org.auth).expect(201);
    await makeRoom(k.auth).expect(201);
    const audit = await app.request.get(`/api/v1/admin/audit?licenseId=${org.id}`).set(OPERATOR).expect(200);
    expect(audit.body.items.map((a: { action: string }) => a.action).slice(0, 2)).toEqual([
      'license.resume',
      'license.suspend',
    ]);
    expect(audit.body.items[0]).toMatchObject({ actor: 'operator', target: org.id });
  });

  it('a rotated license refuses its old key at once; the new key is shown once and works', async () => {
    const org = await grantLicense(app.deps.db, 'Business');
    await app.request.get('/api/v1/commercial/license').set(org.auth).expect(200);
    const rotated = await app.request
      .post(`/api/v1/admin/licenses/${org.id}/rotate`)
      .set(OPERATOR)
      .expect(200);
    const fresh = rotated.body.licenseKey as string;
    expect(fresh).toMatch(/^lk_/);
    expect(fresh).not.toBe(org.token);
    expectProblem(await app.request.get('/api/v1/commercial/license').set(org.auth), 401, 'unauthorized');
    const mine = await app.request.get('/api/v1/commercial/license').set(bearer(fresh)).expect(200);
    expect(mine.body.licenseId).toBe(org.id);
    const shown = await app.request.get(`/api/v1/admin/licenses/${org.id}`).set(OPERATOR).expect(200);
    expect(shown.body.rotatedAt).toEqual(expect.any(String));
    expect(JSON.stringify(shown.body)).not.toContain(fresh);
  });

  it('issues paid tiers only by hand, and the operator lists its own items', async () => {
    expectProblem(
      await app.request
        .post('/api/v1/admin/licenses')
        .set(OPERATOR)
        .send({ organization: 'X', tier: 'TRIAL' }),
      400,
      'validation_failed',
    );
    const roomId = (await makeRoom(OPERATOR, 'Operator room').expect(201)).body.roomId as string;
    const org = await grantLicense(app.deps.db, 'Business');
    await makeRoom(org.auth, 'Org room').expect(201);
    const mine = await app.request.get('/api/governance/rooms?limit=100').set(OPERATOR).expect(200);
    const names = mine.body.items.map((r: { name: string }) => r.name);
    expect(names).not.toContain('Org room');
    expect(mine.body.items.map((r: { roomId: string }) => r.roomId)).toContain(roomId);
  });

  it('drops the sealed copy of the key the checkout opened, on rotation and on revocation', async () => {
    for (const action of ['rotate', 'revoke']) {
      const org = await grantLicense(app.deps.db, 'Business');
      const { checkout_id } = await app.deps.db('licenses').where({ id: org.id }).first();
      await app.deps
        .db('checkouts')
        .where({ id: checkout_id })
        .update({ license_box: Buffer.from('sealed') });
      await app.request.post(`/api/v1/admin/licenses/${org.id}/${action}`).set(OPERATOR).expect(200);
      expect((await app.deps.db('checkouts').where({ id: checkout_id }).first()).license_box).toBeNull();
    }
  });

  it('a revoked license is refused with its keys, and cannot be resumed or rotated', async () => {
    const org = await grantLicense(app.deps.db, 'Business');
    const k = await makeKey(org.auth, ['read']);
    await app.request.post(`/api/v1/admin/licenses/${org.id}/revoke`).set(OPERATOR).expect(200);
    expectProblem(await app.request.get('/api/governance/rooms').set(org.auth), 401, 'license_revoked');
    expectProblem(await app.request.get('/api/governance/rooms').set(k.auth), 401, 'license_revoked');
    expectProblem(
      await app.request.post(`/api/v1/admin/licenses/${org.id}/resume`).set(OPERATOR),
      409,
      'license_already_revoked',
    );
    expectProblem(
      await app.request.post(`/api/v1/admin/licenses/${org.id}/rotate`).set(OPERATOR),
      409,
      'license_already_revoked',
    );
  });

  it('lists, revokes and rotates agents’ keys', async () => {
    const { newWallet } = await import('../exchange/fixtures');
    const reg = await app.request
      .post('/api/registry/register')
      .send({ name: 'Key Agent', walletPublicKey: newWallet().publicKey })
      .expect(201);
    const agentId = reg.body.agent.id as string;
    const oldKey = reg.body.apiKey as string;
    const list = await app.request
      .get(`/api/v1/admin/agent-keys?agentId=${agentId}`)
      .set(OPERATOR)
      .expect(200);
    expect(list.body.items).toHaveLength(1);
    const keyId = list.body.items[0].keyId as string;
    expect(JSON.stringify(list.body)).not.toContain(oldKey);
    const rotated = await app.request
      .post(`/api/v1/admin/agent-keys/${keyId}/rotate`)
      .set(OPERATOR)
      .expect(200);
    const newKey = rotated.body.apiKey as string;
    expect(newKey).toMatch(/^ak_/);
    expectProblem(await app.request.post('/api/referrals').set(bearer(oldKey)).send({}), 401, 'unauthorized');
    await app.request.post('/api/referrals').set(bearer(newKey)).send({}).expect(201);
    const newKeyId = rotated.body.key.keyId as string;
    await app.request.post(`/api/v1/admin/agent-keys/${newKeyId}/revoke`).set(OPERATOR).expect(200);
    expectProblem(await app.request.post('/api/referrals').set(bearer(newKey)).send({}), 401, 'unauthorized');
    const audit = await app.request.get('/api/v1/admin/audit').set(OPERATOR).expect(200);
    expect(audit.body.items.slice(0, 2).map((a: { action: string }) => a.action)).toEqual([
      'agent_key.revoke',
      'agent_key.rotate',
    ]);
  });
});

/** A proposal, a treasury request, an auction and a workflow of one organization, made with its key. */
async function holdOneOfEach(auth: { Authorization: string }): Promise<Record<string, string>> {
  const signers = [wallet(), wallet()];
  const roomId = (
    await app.request
      .post('/api/governance/rooms')
      .set(auth)
      .send({ name: 'Their room', members: signers.map((w) => w.address) })
      .expect(201)
  ).body.roomId as string;
  for (const slug of ['review', 'signers'])
    await app.request
      .post(`/api/governance/rooms/${roomId}/committees`)
      .set(auth)
      .send({ slug, name: slug, members: signers.map((w) => w.address), threshold: 2 })
      .expect(201);
  const proposalId = (
    await app.request
      .post('/api/governance/proposals')
      .set(auth)
      .send({ roomId, title: 'Theirs', options: ['yes', 'no'], reviewCommittee: 'review', votingSeconds: 60 })
      .expect(201)
  ).body.proposalId as string;
  await app.request
    .post('/api/treasury/limits')
    .set(auth)
    .send({ roomId, asset: 'USDC-SOL', periodSeconds: 86_400, limit: '1000000' })
    .expect(200);
  const requestId = (
    await app.request
      .post('/api/treasury/requests')
      .set(auth)
      .send({
        roomId,
        committee: 'signers',
        operation: 'spend',
        asset: 'USDC-SOL',
        recipient: 'VendorWallet1',
        purposeHash: 'c'.repeat(64),
        amount: '1000',
      })
      .expect(201)
  ).body.requestId as string;
  const auctionId = (
    await app.request
      .post('/api/auctions')
      .set(auth)
      .send({
        title: 'Their lot',
        pricing: 'second',
        asset: 'USDC-SOL',
        biddingEndsAt: new Date(Date.now() + 60_000).toISOString(),
        revealEndsAt: new Date(Date.now() + 120_000).toISOString(),
      })
      .expect(201)
  ).body.auctionId as string;
  const workflowId = (
    await app.request
      .post('/api/proof-workflows/prepare')
      .set(auth)
      .send({ template: 'Grant Review' })
      .expect(201)
  ).body.workflowId as string;
  return { roomId, proposalId, requestId, auctionId, workflowId };
}

describe('organization lists', () => {
  it('list only the caller’s own, page by opaque cursor, and never open another’s item by id', async () => {
    const a = await grantLicense(app.deps.db, 'Business');
    const b = await grantLicense(app.deps.db, 'Business');
    const aRead = await makeKey(a.auth, ['read']);
    const bAdmin = await makeKey(b.auth, ['admin']);
    const mine: string[] = [];
    for (const name of ['A1', 'A2', 'A3'])
      mine.push((await makeRoom(a.auth, name).expect(201)).body.roomId as string);
    const theirs = (await makeRoom(b.auth, 'B1').expect(201)).body.roomId as string;

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: { body: { items: Array<{ roomId: string }>; nextCursor: string | null } } = await app.request
        .get('/api/governance/rooms')
        .query({ limit: 2, ...(cursor ? { cursor } : {}) })
        .set(aRead.auth)
        .expect(200);
      seen.push(...res.body.items.map((r) => r.roomId));
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...mine].reverse());
    expect((await app.request.get('/api/proof-workflows').set(a.auth).expect(200)).body.items).toEqual([]);
    // B holds one of each line's items; A's lists show none of them, B's own list each.
    const theirItems = await holdOneOfEach(b.auth);
    for (const [path, idField] of [
      ['/api/governance/proposals', 'proposalId'],
      ['/api/treasury/requests', 'requestId'],
      ['/api/auctions', 'auctionId'],
      ['/api/proof-workflows', 'workflowId'],
    ] as const) {
      expect((await app.request.get(path).set(aRead.auth).expect(200)).body.items, path).toEqual([]);
      const own = (await app.request.get(path).set(bAdmin.auth).expect(200)).body.items;
      expect(
        own.map((i: Record<string, string>) => i[idField]),
        path,
      ).toEqual([theirItems[idField]]);
    }
    // B's admin key sees B's room only, and A's room by id is not found for it.
    const bRooms = await app.request.get('/api/governance/rooms').set(bAdmin.auth).expect(200);
    expect(bRooms.body.items.map((r: { roomId: string }) => r.roomId)).toEqual([theirItems.roomId, theirs]);
    expectProblem(
      await app.request.get(`/api/governance/rooms/${mine[0]}`).set(bAdmin.auth),
      404,
      'not_found',
    );
    expectProblem(await app.request.get(`/api/governance/rooms/${theirs}`).set(aRead.auth), 404, 'not_found');
    // A cursor is opaque and belongs to its list: a forged or foreign one is refused, as is a limit past 100.
    const page = await app.request.get('/api/governance/rooms?limit=1').set(a.auth).expect(200);
    expectProblem(
      await app.request.get('/api/auctions').query({ cursor: page.body.nextCursor }).set(a.auth),
      400,
      'invalid_cursor',
    );
    expectProblem(await app.request.get('/api/auctions?cursor=bm9wZQ').set(a.auth), 400, 'invalid_cursor');
    expectProblem(await app.request.get('/api/auctions?limit=101').set(a.auth), 400, 'validation_failed');
    const nul = Buffer.from(JSON.stringify({ l: 'rooms', id: 'room_\u0000' })).toString('base64url');
    expectProblem(
      await app.request.get('/api/governance/rooms').query({ cursor: nul }).set(a.auth),
      400,
      'invalid_cursor',
    );
    // A cursor shaped as the audit's but naming no number is refused, not a database error.
    const forged = Buffer.from(JSON.stringify({ l: 'audit', id: 'x' })).toString('base64url');
    expectProblem(
      await app.request.get('/api/v1/admin/audit').query({ cursor: forged }).set(OPERATOR),
      400,
      'invalid_cursor',
    );
  });
});

describe('public workflow status', () => {
  it('holds no per-tenant figure: templates without counts, one global total', async () => {
    const a = await grantLicense(app.deps.db, 'Business', 'Visible Tenant One');
    await app.request
      .post('/api/proof-workflows/prepare')
      .set(a.auth)
      .send({ template: 'Grant Review' })
      .expect(201);
    const res = await app.request.get('/api/proof-workflows/status').expect(200);
    for (const t of res.body.templates) expect(t).not.toHaveProperty('counts');
    const total = Number((await app.deps.db('workflows').count('* as n'))[0]!.n);
    expect(res.body.totals.total).toBe(total);
    const text = JSON.stringify(res.body);
    expect(text).not.toContain(a.id);
    expect(text).not.toContain('Visible Tenant');
    expect(text).not.toMatch(/"(owner|licenseId|organization)"/);
  });
});

describe('npm run admin', () => {
  let server: http.Server;
  let url: string;
  beforeAll(async () => {
    server = http.createServer(createApp(app.deps));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  async function admin(...args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runAdmin(
      args,
      { out: (l) => out.push(l), err: (l) => err.push(l) },
      { url, token: 'op_test_token_0123456789' },
    );
    return { code, out, err };
  }

  it('issues, lists, suspends, rotates and revokes against a real server', async () => {
    const issued = await admin(
      'licenses',
      'issue',
      '--organization',
      'Cli Works Ltd',
      '--tier',
      'Starter',
      '--note',
      'INV-7',
    );
    expect(issued.code, issued.err.join('\n')).toBe(0);
    const key = issued.out.find((l) => l.startsWith('lk_'))!;
    const licenseId = /lic_[0-9a-z]{26}/.exec(issued.out[0]!)![0];
    await app.request.get('/api/v1/commercial/license').set(bearer(key)).expect(200);

    const listed = await admin('licenses', 'list', '--organization', 'cli works', '--json');
    expect(listed.code).toBe(0);
    const body = JSON.parse(listed.out.join('\n'));
    expect(body.items.map((l: { licenseId: string }) => l.licenseId)).toEqual([licenseId]);
    expect(listed.out.join('\n')).not.toContain(key);

    const human = await admin('licenses', 'list', '--organization', 'cli works');
    expect(human.out).toHaveLength(1);
    expect(human.out[0]).toContain(licenseId);
    expect(human.out[0]).toContain('INV-7');

    expect((await admin('licenses', 'suspend', licenseId)).code).toBe(0);
    expectProblem(
      await app.request.get('/api/v1/commercial/license').set(bearer(key)),
      401,
      'license_suspended',
    );
    expect((await admin('licenses', 'resume', licenseId)).code).toBe(0);

    const rotated = await admin('licenses', 'rotate', licenseId);
    expect(rotated.code).toBe(0);
    const fresh = rotated.out.find((l) => l.startsWith('lk_'))!;
    expectProblem(await app.request.get('/api/v1/commercial/license').set(bearer(key)), 401, 'unauthorized');

    // The organization's keys, as the operator sees them: a prefix, never the key; one revoked at once.
    const orgKey = await makeKey(bearer(fresh), ['read']);
    const keys = await admin('org-keys', 'list', licenseId);
    expect(keys.code).toBe(0);
    expect(keys.out).toHaveLength(1);
    expect(keys.out[0]).toContain(orgKey.keyId);
    expect(keys.out[0]).toContain(orgKey.key.slice(0, 11));
    expect(keys.out.join('\n')).not.toContain(orgKey.key);
    expect((await admin('org-keys', 'revoke', licenseId, '--key', orgKey.keyId)).code).toBe(0);
    expectProblem(await app.request.get('/api/governance/rooms').set(orgKey.auth), 401, 'key_revoked');

    const revoked = await admin('licenses', 'revoke', licenseId);
    expect(revoked.code).toBe(0);
    expect(revoked.out[0]).toContain('revoked');
    expectProblem(
      await app.request.get('/api/v1/commercial/license').set(bearer(fresh)),
      401,
      'license_revoked',
    );

    const audit = await admin('audit', '--license', licenseId, '--json');
    expect(JSON.parse(audit.out.join('\n')).items.map((a: { action: string }) => a.action)).toEqual([
      'license.revoke',
      'organization_key.revoke',
      'organization_key.create',
      'license.rotate',
      'license.resume',
      'license.suspend',
      'license.issue',
    ]);
  });

  it('prints stored names escaped: a CR, a CSI or a bidi override cannot rewrite the operator’s rows', async () => {
    // A row stored before the input guard refused these characters (written here past the API).
    const tag = Math.random().toString(36).slice(2);
    const org = await grantLicense(
      app.deps.db,
      'Business',
      `Evil ${tag}\r${'lic_fake'.padEnd(30)}\u009b2K\u202eCorp`,
    );
    await app.deps.db('licenses').where({ id: org.id }).update({ note: 'paid\u2028\u200binvoice' });
    const human = await admin('licenses', 'list', '--organization', `Evil ${tag} lic fake 2K Corp`);
    expect(human.code, human.err.join('\n')).toBe(0);
    expect(human.out).toHaveLength(1);
    const row = human.out[0]!;
    expect(row).toContain(org.id);
    expect(row).toContain(`Evil ${tag}\\u{000D}lic_fake`);
    expect(row).toContain('\\u{009B}2K\\u{202E}Corp');
    expect(row).toContain('paid\\u{2028}\\u{200B}invoice');
    expect(row).not.toMatch(/[\r\n\u0080-\u009f\u2028\u202e\u200b]/);
    const json = await admin('licenses', 'list', '--organization', `Evil ${tag} lic fake 2K Corp`, '--json');
    const text = json.out.join('\n');
    expect(text).not.toMatch(/[\r\u0080-\u009f\u2028\u202e\u200b]/);
    // Still JSON, and the same name once parsed.
    expect(JSON.parse(text).items[0].organization).toBe(
      `Evil ${tag}\r${'lic_fake'.padEnd(30)}\u009b2K\u202eCorp`,
    );
  });

  it('says what went wrong: usage (2), the service’s refusal (1)', async () => {
    expect((await admin('licenses', 'frobnicate')).code).toBe(2);
    expect((await admin('licenses', 'issue', '--tier', 'Starter')).code).toBe(2);
    const missing = await admin('licenses', 'show', 'lic_01jd3zzzzzzzzzzzzzzzzzzzzz');
    expect(missing.code).toBe(1);
    expect(missing.err[0]).toContain('not_found');
    const out: string[] = [];
    const wrong = await runAdmin(
      ['licenses', 'list'],
      { out: (l) => out.push(l), err: (l) => out.push(l) },
      { url, token: 'op_wrong_token_0123456789' },
    );
    expect(wrong).toBe(1);
    expect(out.join('\n')).toContain('401');
  });
});
