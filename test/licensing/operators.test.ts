// Named operator keys: issued by an admin (the bootstrap token first), each with a role that the routes
// and Bull Board hold it to (read-only changes nothing, support contains abuse and retries jobs, admin
// does everything), each named in the audit of what it did, refused once revoked or rotated away; and
// `npm run admin -- operators …` against a real server. Bull Board's jobs say what they are.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { runAdmin } from '../../cli/admin';
import { bearer, grantLicense, sha256Of, testApp, testJobsWorker, waitForJob } from '../helpers';
import type { TestApp } from '../helpers';
import { expectProblem } from './helpers';

const BOOTSTRAP = bearer('op_test_token_0123456789');
let app: TestApp;

beforeAll(() => {
  app = testApp();
});
afterAll(async () => {
  await app.close();
});

const tag = () => Math.random().toString(36).slice(2, 10);

async function issue(role: 'read-only' | 'support' | 'admin', by = BOOTSTRAP) {
  const name = `${role}-${tag()}`;
  const res = await app.request.post('/api/v1/admin/operators').set(by).send({ name, role });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return {
    name,
    id: res.body.operator.operatorId as string,
    key: res.body.operatorKey as string,
    auth: bearer(res.body.operatorKey),
  };
}

const auditOf = async (target: string) =>
  (await app.request.get('/api/v1/admin/audit?limit=100').set(BOOTSTRAP).expect(200)).body.items.filter(
    (a: { target: string }) => a.target === target,
  ) as Array<{ actor: string; action: string; detail: Record<string, unknown> }>;

describe('named operator keys', () => {
  it('are issued once, listed by prefix, and named in the audit', async () => {
    const admin = await issue('admin');
    expect(admin.key).toMatch(/^opk_[A-Za-z0-9_-]{43}$/);
    const listed = await app.request.get('/api/v1/admin/operators?limit=100').set(BOOTSTRAP).expect(200);
    const row = listed.body.items.find((o: { operatorId: string }) => o.operatorId === admin.id);
    expect(row).toMatchObject({ name: admin.name, role: 'admin', createdBy: 'operator', revokedAt: null });
    expect(row.prefix).toBe(`${admin.key.slice(0, 12)}…`);
    expect(JSON.stringify(listed.body)).not.toContain(admin.key);
    expect(JSON.stringify(await app.deps.db('operator_keys'))).not.toContain(admin.key);
    expect(await auditOf(admin.id)).toEqual([
      expect.objectContaining({ actor: 'operator', action: 'operator_key.issue' }),
    ]);
    // The named admin issues a license: the audit says who.
    const issued = await app.request
      .post('/api/v1/admin/licenses')
      .set(admin.auth)
      .send({ organization: `Named ${tag()}`, tier: 'Starter' })
      .expect(201);
    const licenseId = issued.body.license.licenseId as string;
    expect(await auditOf(licenseId)).toEqual([
      expect.objectContaining({ actor: `operator:${admin.name}`, action: 'license.issue' }),
    ]);
    // A name is one person's, for good.
    expectProblem(
      await app.request
        .post('/api/v1/admin/operators')
        .set(BOOTSTRAP)
        .send({ name: admin.name, role: 'support' }),
      409,
      'operator_name_taken',
    );
    expectProblem(
      await app.request
        .post('/api/v1/admin/operators')
        .set(BOOTSTRAP)
        .send({ name: 'a b\u202e', role: 'admin' }),
      400,
      'validation_failed',
    );
  });

  it('a read-only key reads everything and changes nothing', async () => {
    const reader = await issue('read-only');
    const org = await grantLicense(app.deps.db, 'Business');
    await app.request.get('/api/v1/admin/licenses').set(reader.auth).expect(200);
    await app.request.get(`/api/v1/admin/licenses/${org.id}`).set(reader.auth).expect(200);
    await app.request.get('/api/v1/admin/audit').set(reader.auth).expect(200);
    await app.request.get('/api/revenue').set(reader.auth).expect(200);
    const before = await app.deps.db('licenses').where({ id: org.id }).first();
    const actions = Number((await app.deps.db('admin_actions').count('* as n'))[0]!.n);
    for (const [path, body] of [
      [`/api/v1/admin/licenses/${org.id}/suspend`, {}],
      [`/api/v1/admin/licenses/${org.id}/revoke`, {}],
      ['/api/v1/admin/licenses', { organization: `RO ${tag()}`, tier: 'Starter' }],
      ['/api/v1/admin/operators', { name: `x-${tag()}`, role: 'admin' }],
      ['/api/governance/rooms', { name: 'Board' }],
    ] as const) {
      const res = await app.request.post(path).set(reader.auth).send(body);
      expectProblem(res, 403, 'operator_role_insufficient');
      expect(res.body).toMatchObject({ role: 'read-only' });
    }
    expect(await app.deps.db('licenses').where({ id: org.id }).first()).toEqual(before);
    expect(Number((await app.deps.db('admin_actions').count('* as n'))[0]!.n)).toBe(actions);
  });

  it('a support key contains abuse (suspend, resume, revoke keys) and no more', async () => {
    const support = await issue('support');
    const org = await grantLicense(app.deps.db, 'Business');
    await app.request.post(`/api/v1/admin/licenses/${org.id}/suspend`).set(support.auth).expect(200);
    expectProblem(
      await app.request.get('/api/v1/commercial/license').set(org.auth),
      401,
      'license_suspended',
    );
    await app.request.post(`/api/v1/admin/licenses/${org.id}/resume`).set(support.auth).expect(200);
    const key = await app.request
      .post('/api/v1/organization/keys')
      .set(org.auth)
      .send({ name: 'ci', scopes: ['read'] })
      .expect(201);
    await app.request
      .post(`/api/v1/admin/licenses/${org.id}/keys/${key.body.key.keyId}/revoke`)
      .set(support.auth)
      .expect(200);
    expectProblem(
      await app.request.post(`/api/v1/admin/licenses/${org.id}/revoke`).set(support.auth),
      403,
      'operator_role_insufficient',
    );
    expectProblem(
      await app.request.post(`/api/v1/admin/licenses/${org.id}/rotate`).set(support.auth),
      403,
      'operator_role_insufficient',
    );
    expectProblem(
      await app.request
        .post('/api/v1/admin/operators')
        .set(support.auth)
        .send({ name: `s-${tag()}`, role: 'read-only' }),
      403,
      'operator_role_insufficient',
    );
    expect((await app.deps.db('licenses').where({ id: org.id }).first()).revoked_at).toBeNull();
    const ofLicense = await app.request
      .get(`/api/v1/admin/audit?licenseId=${org.id}`)
      .set(BOOTSTRAP)
      .expect(200);
    expect(ofLicense.body.items.map((a: { actor: string; action: string }) => [a.actor, a.action])).toEqual([
      [`operator:${support.name}`, 'organization_key.revoke'],
      ['license:' + org.id, 'organization_key.create'],
      [`operator:${support.name}`, 'license.resume'],
      [`operator:${support.name}`, 'license.suspend'],
    ]);
  });

  it('a revoked key is refused from its next request; a rotated one keeps its name, not its old key', async () => {
    const admin = await issue('admin');
    const other = await issue('support', admin.auth);
    const rotated = await app.request
      .post(`/api/v1/admin/operators/${other.id}/rotate`)
      .set(admin.auth)
      .expect(200);
    expect(rotated.body.operator).toMatchObject({ name: other.name, role: 'support' });
    expectProblem(await app.request.get('/api/v1/admin/licenses').set(other.auth), 401, 'unauthorized');
    const fresh = bearer(rotated.body.operatorKey);
    await app.request.get('/api/v1/admin/licenses').set(fresh).expect(200);
    await app.request.post(`/api/v1/admin/operators/${other.id}/revoke`).set(admin.auth).expect(200);
    expectProblem(await app.request.get('/api/v1/admin/licenses').set(fresh), 401, 'key_revoked');
    expectProblem(await app.request.get('/admin/queues').set(fresh), 401, 'unauthorized');
    expectProblem(
      await app.request.post(`/api/v1/admin/operators/${other.id}/rotate`).set(admin.auth),
      409,
      'operator_key_revoked',
    );
    expect((await auditOf(other.id)).map((a) => [a.actor, a.action])).toEqual([
      [`operator:${admin.name}`, 'operator_key.revoke'],
      [`operator:${admin.name}`, 'operator_key.rotate'],
      [`operator:${admin.name}`, 'operator_key.issue'],
    ]);
  });
});

describe('Bull Board by role', () => {
  const worker = testJobsWorker();
  afterAll(() => worker.close());

  it('shows what each job is; read-only sees it and changes nothing, support retries, admin cleans', async () => {
    const license = await grantLicense(app.deps.db, 'Business');
    const created = await app.request
      .post('/api/jobs')
      .set(license.auth)
      .send({ service: 'attest.batch', input: { digests: [await sha256Of('a'), await sha256Of('b')] } });
    expect([201, 202], JSON.stringify(created.body)).toContain(created.status);
    const id = created.body.job.id as string;
    expect((await waitForJob(app.request, id, license.token)).status).toBe('succeeded');

    const reader = await issue('read-only');
    const support = await issue('support');
    const admin = await issue('admin');
    // The job as the board shows it: the service as its name, the ids, its timings and attempts, at 100%.
    const shown = await app.request.get(`/admin/queues/api/queues/jobs/${id}`).set(reader.auth).expect(200);
    expect(shown.body.job).toMatchObject({
      id,
      name: 'attest.batch',
      data: { jobId: id, service: 'attest.batch' },
      progress: 100,
      attempts: 1,
    });
    expect(shown.body.job.processedOn).toEqual(expect.any(Number));
    expect(shown.body.job.finishedOn).toEqual(expect.any(Number));
    expect(JSON.stringify(shown.body)).not.toContain(created.body.accessToken);
    const page = await app.request.get('/admin/queues').set(reader.auth).expect(200);
    expect(page.text).toContain('read-only');
    // Basic works as well, with the key as the password.
    const basic = `Basic ${Buffer.from(`x:${reader.key}`).toString('base64')}`;
    await app.request.get('/admin/queues/api/queues').set('Authorization', basic).expect(200);

    // Read-only: no retry, clean, pause or remove, refused before the board runs.
    for (const [method, path] of [
      ['put', `/admin/queues/api/queues/jobs/${id}/retry/completed`],
      ['put', '/admin/queues/api/queues/jobs/retry/failed'],
      ['put', '/admin/queues/api/queues/jobs/clean/completed'],
      ['put', '/admin/queues/api/queues/jobs/pause'],
      ['put', `/admin/queues/api/queues/jobs/${id}/clean`],
    ] as const) {
      expectProblem(await app.request[method](path).set(reader.auth), 403, 'operator_role_insufficient');
    }
    // Support retries failed jobs, and cleans nothing.
    await app.request.put('/admin/queues/api/queues/jobs/retry/failed').set(support.auth).expect(200);
    expectProblem(
      await app.request.put('/admin/queues/api/queues/jobs/clean/completed').set(support.auth),
      403,
      'operator_role_insufficient',
    );
    expectProblem(
      await app.request.put('/admin/queues/api/queues/jobs/pause').set(support.auth),
      403,
      'operator_role_insufficient',
    );
    expect(await app.deps.queues.get('jobs').getJob(id)).toBeTruthy();
    // Admin removes the finished job from Redis (Postgres keeps it).
    await app.request.put(`/admin/queues/api/queues/jobs/${id}/clean`).set(admin.auth).expect(204);
    expect(await app.deps.queues.get('jobs').getJob(id)).toBeFalsy();
    expect((await app.deps.db('jobs').where({ id }).first()).status).toBe('succeeded');
  });
});

describe('npm run admin -- operators', () => {
  let server: http.Server;
  let url: string;
  beforeAll(async () => {
    server = http.createServer(createApp(app.deps));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  async function admin(token: string, ...args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runAdmin(args, { out: (l) => out.push(l), err: (l) => err.push(l) }, { url, token });
    return { code, out, err };
  }

  it('issues a key shown once, lists it, and the key acts by its role', async () => {
    const name = `alice-${tag()}`;
    const issued = await admin(
      'op_test_token_0123456789',
      'operators',
      'issue',
      '--name',
      name,
      '--role',
      'support',
    );
    expect(issued.code, issued.err.join('\n')).toBe(0);
    const key = issued.out.find((l) => l.startsWith('opk_'))!;
    expect(key).toMatch(/^opk_/);
    expect(issued.err.join('\n')).toContain('shown this once');
    const operatorId = /opr_[0-9a-z]{26}/.exec(issued.out[0]!)![0];

    const listed = await admin(key, 'operators', 'list', '--limit', '100');
    expect(listed.code).toBe(0);
    const line = listed.out.find((l) => l.includes(operatorId))!;
    expect(line).toContain('support');
    expect(line).toContain(name);
    expect(listed.out.join('\n')).not.toContain(key);

    // Support may not issue operators: the service's refusal, exit 1.
    const refused = await admin(key, 'operators', 'issue', '--name', `bob-${tag()}`, '--role', 'admin');
    expect(refused.code).toBe(1);
    expect(refused.err.join('\n')).toContain('operator_role_insufficient');

    const revoked = await admin('op_test_token_0123456789', 'operators', 'revoke', operatorId);
    expect(revoked.code).toBe(0);
    expect(revoked.out[0]).toContain('revoked');
    expect((await admin(key, 'licenses', 'list')).code).toBe(1);
    expect((await admin('op_test_token_0123456789', 'operators', 'issue', '--name', 'x')).code).toBe(2);
  });
});
