// Server-made requests never reach inside: webhooks, agent endpoints and deliveries aimed at loopback,
// private, link-local, CGNAT, NAT64, mapped or site-local addresses are refused at registration and at
// connection, a name that rebinds to loopback between the check and the connection is refused at the
// connection (the socket is pinned to the checked answer), and redirects are not followed. Each test
// keeps a loopback listener that must hear nothing.
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressRefusedError, egressDns, refusedRange, userFetch } from '../../shared/platform/egress';
import { env } from '../../shared/platform/env';
import { deliveriesProcessor } from '../../workers/processors/deliveries';
import { expectProblem, registerAgent } from '../exchange/fixtures';
import { eventually, sha256Of, testApp, testJobsWorker, testQueueWorker } from '../helpers';
import type { TestApp, TestWorker } from '../helpers';

/** A loopback TCP listener that counts every connection made to it (HTTP or TLS alike). */
async function listener() {
  const connections: number[] = [];
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    res.writeHead(200).end('ok');
  });
  server.on('connection', () => connections.push(Date.now()));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return { port, connections, requests, close: () => new Promise<void>((r) => server.close(() => r())) };
}

let app: TestApp;
let jobs: TestWorker;
let deliveries: TestWorker;
beforeAll(() => {
  expect(env.LOGISTICS_ALLOW_PRIVATE_TARGETS).toBe(false); // the default, never turned on here
  app = testApp();
  jobs = testJobsWorker();
  deliveries = testQueueWorker('deliveries', deliveriesProcessor);
});
afterAll(async () => {
  await deliveries.close();
  await jobs.close();
  await app.close();
});

const count = async (table: string) => Number((await app.deps.db(table).count({ n: '*' }))[0]!.n);

const internalTargets = (port: number) => [
  `http://127.0.0.1:${port}/hook`,
  `https://127.0.0.1:${port}/hook`,
  `https://localhost:${port}/hook`,
  `https://2130706433:${port}/hook`, // 127.0.0.1 spelled as one number
  `https://0x7f.1:${port}/hook`,
  `https://[::1]:${port}/hook`,
  `https://[::ffff:127.0.0.1]:${port}/hook`,
  `https://[::127.0.0.1]:${port}/hook`,
  `https://[64:ff9b::7f00:1]:${port}/hook`,
  `https://[fec0::1]:${port}/hook`,
  `https://[fe80::1]:${port}/hook`,
  `https://[2002:7f00:1::]:${port}/hook`,
  'https://169.254.169.254/latest/meta-data/',
  'https://[::1]:5432/',
  'https://127.0.0.1:6379/',
  'https://10.0.0.8/hook',
  'https://192.168.1.1/hook',
  'https://100.64.0.1/hook',
  'https://0.0.0.0/hook',
  'https://224.0.0.1/hook',
  'https://intranet/hook',
];

describe('egress to internal targets', () => {
  it('refuses job webhooks on internal addresses; the loopback listener hears nothing', async () => {
    const target = await listener();
    try {
      const jobsBefore = await count('jobs');
      for (const url of internalTargets(target.port)) {
        const res = await app.request.post('/api/jobs').send({
          service: 'attest.timestamp',
          input: { digest: await sha256Of(url) },
          webhook: { url },
        });
        expect([400, 422], `${url}: ${JSON.stringify(res.body)}`).toContain(res.status);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        if (res.status === 422) expect(res.body.code).toBe('target_not_allowed');
      }
      expect(await count('jobs')).toBe(jobsBefore);
      expect(await count('job_webhooks')).toBe(0);
      expect(target.connections).toHaveLength(0);
    } finally {
      await target.close();
    }
  });

  it('refuses an agent endpoint on an internal address at registration, with a stable code', async () => {
    const agents = await count('agents');
    for (const endpointUrl of [
      'https://127.0.0.1:9/handoff',
      'https://[::ffff:10.0.0.1]/handoff',
      'https://169.254.169.254/',
    ]) {
      const res = await app.request.post('/api/registry/register').send({
        name: 'inside',
        walletPublicKey: 'So11111111111111111111111111111111111111112',
        endpointUrl,
      });
      expectProblem(res, 422, 'target_not_allowed');
      expect(res.body.errors[0].path).toBe('body.endpointUrl');
    }
    expect(await count('agents')).toBe(agents);
  });

  it('refuses a name that rebinds to loopback after the check, at the connection; nothing connects', async () => {
    const target = await listener();
    const real = egressDns.lookup;
    let answers = 0;
    // The attacker's DNS: a public address for the checks at registration and request, loopback after.
    egressDns.lookup = (hostname, options, callback) => {
      if (hostname !== 'rebind.attacker.test') return real(hostname, options, callback);
      answers++;
      const address = answers <= 2 ? '93.184.215.14' : '127.0.0.1';
      callback(null, [{ address, family: 4 }]);
    };
    try {
      const url = `https://rebind.attacker.test:${target.port}/hook`;
      const recipient = await registerAgent(app, { name: 'Rebinder', endpointUrl: url });
      const job = await app.request
        .post('/api/jobs')
        .send({ service: 'attest.timestamp', input: { digest: await sha256Of('rebind') } })
        .expect(202);
      const handoff = await app.request
        .post('/api/logistics/request')
        .set('Authorization', `Bearer ${job.body.accessToken}`)
        .send({ jobId: job.body.job.id, method: 'agent_handoff', targetAgentId: recipient.id })
        .expect(202);
      const done = await eventually(async () => {
        const row = await app.deps.db('logistics_requests').where({ id: handoff.body.request.id }).first();
        return row.status === 'failed' && row;
      });
      expect(done.last_error).toMatch(/internal address/);
      expect(answers).toBeGreaterThanOrEqual(3);
      expect(target.connections).toHaveLength(0);

      // The same at the module's edge: resolved once, by the connection, and refused there.
      await expect(userFetch(url, { method: 'POST', body: '{}' })).rejects.toBeInstanceOf(EgressRefusedError);
      expect(target.connections).toHaveLength(0);
    } finally {
      egressDns.lookup = real;
      await target.close();
    }
  });

  it('does not follow a redirect, even where private targets are opted in', async () => {
    const inside = await listener();
    const redirector = http.createServer((_req, res) => {
      res.writeHead(307, { location: `http://127.0.0.1:${inside.port}/secret` }).end();
    });
    await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', r));
    env.LOGISTICS_ALLOW_PRIVATE_TARGETS = true; // this test's own receivers are on loopback
    try {
      const port = (redirector.address() as AddressInfo).port;
      const job = await app.request
        .post('/api/jobs')
        .send({ service: 'attest.timestamp', input: { digest: await sha256Of('redirect') } })
        .expect(202);
      const res = await app.request
        .post('/api/logistics/request')
        .set('Authorization', `Bearer ${job.body.accessToken}`)
        .send({ jobId: job.body.job.id, method: 'webhook', targetUrl: `http://127.0.0.1:${port}/hook` })
        .expect(202);
      const row = await eventually(async () => {
        const r = await app.deps.db('logistics_requests').where({ id: res.body.request.id }).first();
        return r.last_status_code === 307 && r;
      });
      expect(row.status).not.toBe('delivered');
      expect(inside.connections).toHaveLength(0);
    } finally {
      env.LOGISTICS_ALLOW_PRIVATE_TARGETS = false;
      await new Promise<void>((r) => redirector.close(() => r()));
      await inside.close();
    }
  });

  it('classifies addresses: only public unicast passes', () => {
    for (const a of ['8.8.8.8', '93.184.215.14', '2606:4700:4700::1111', '2a00:1450:4001:81b::200e'])
      expect(refusedRange(a), a).toBeUndefined();
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '255.255.255.255',
      '224.0.0.251',
      '192.0.2.1',
      '198.18.0.1',
      '240.0.0.1',
      '::',
      '::1',
      '::ffff:8.8.8.8',
      '::127.0.0.1',
      '64:ff9b::808:808',
      '64:ff9b:1::1',
      '2002:0808:0808::1',
      '2001:0:4136:e378::1',
      'fec0::1',
      'fc00::1',
      'fe80::1',
      'ff02::1',
      '2001:db8::1',
      '100::1',
      'not-an-address',
    ])
      expect(refusedRange(a), a).toBeDefined();
  });

  it('keeps no listener of its own reachable: a raw TCP port on loopback is refused as well', async () => {
    const server = net.createServer((s) => s.end());
    let hits = 0;
    server.on('connection', () => hits++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as AddressInfo).port;
      await expect(userFetch(`https://127.0.0.1:${port}/`)).rejects.toBeInstanceOf(EgressRefusedError);
      await expect(userFetch(`https://localhost:${port}/`)).rejects.toBeInstanceOf(EgressRefusedError);
      expect(hits).toBe(0);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
