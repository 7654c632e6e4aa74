// Public status answers never show where the service's providers live. Every provider is configured on
// a loopback address (one answering, one refusing connections, one answering 503, one silent, one that
// puts addresses in its own answer), and every public status route is asked anonymously: configured,
// reachable, latency and a reason code come back, and no IP address, host:port or URL of an endpoint
// appears anywhere in a body — nor in readiness and health with the database unreachable.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../shared/platform/db/knex';
import { env } from '../../shared/platform/env';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;
const servers: http.Server[] = [];

async function serve(handler: Handler): Promise<number> {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => handler(req, res, body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return (server.address() as AddressInfo).port;
}

const json = (res: http.ServerResponse, status: number, doc: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(doc));

/** A port nothing listens on: connections are refused. */
async function closedPort(): Promise<number> {
  const port = await serve(() => undefined);
  const server = servers.pop()!;
  await new Promise((r) => server.close(r));
  return port;
}

let app: TestApp;
const ports: Record<string, number> = {};
const settings = {
  SOLANA_RPC_URL: env.SOLANA_RPC_URL,
  EVM_RPC_URL: env.EVM_RPC_URL,
  BITCOIN_ESPLORA_URL: env.BITCOIN_ESPLORA_URL,
  MONERO_WALLET_RPC_URL: env.MONERO_WALLET_RPC_URL,
  LOCAL_AI_URL: env.LOCAL_AI_URL,
  LOCAL_AI_MODEL: env.LOCAL_AI_MODEL,
  PAYMENTS_PROVIDER_URL: env.PAYMENTS_PROVIDER_URL,
  PAYMENTS_PROVIDER_LABEL: env.PAYMENTS_PROVIDER_LABEL,
  RATE_SOURCE_URL: env.RATE_SOURCE_URL,
  PROVIDER_TIMEOUT_MS: env.PROVIDER_TIMEOUT_MS,
  PROVIDER_STATUS_CACHE_MS: env.PROVIDER_STATUS_CACHE_MS,
};

beforeAll(async () => {
  ports.solana = await serve((_req, res, body) =>
    json(res, 200, { jsonrpc: '2.0', id: JSON.parse(body).id, result: 123_456 }),
  );
  ports.evm = await closedPort();
  ports.bitcoin = await serve((_req, res) => json(res, 503, { error: 'down at 127.0.0.1:18443' }));
  ports.monero = await serve(() => undefined); // never answers
  ports.ai = await serve((req, res) =>
    req.url === '/api/tags'
      ? json(res, 200, { models: [{ name: 'model-x', digest: 'ab'.repeat(32) }] })
      : json(res, 200, { data: [{ id: 'model-x', root: `http://127.0.0.1:${ports.ai}/weights` }] }),
  );
  // The provider's own health names its internal addresses: the service must not pass them on.
  ports.provider = await serve((_req, res) =>
    json(res, 200, {
      ok: true,
      mock: true,
      rpc: 'http://10.20.30.40:8899',
      db: 'postgres://payments@db.internal:5432/payments',
      upstream: '[fd00::5]:443',
    }),
  );
  ports.rates = await closedPort();
  Object.assign(env, {
    SOLANA_RPC_URL: `http://127.0.0.1:${ports.solana}`,
    EVM_RPC_URL: `http://127.0.0.1:${ports.evm}`,
    BITCOIN_ESPLORA_URL: `http://127.0.0.1:${ports.bitcoin}`,
    MONERO_WALLET_RPC_URL: `http://127.0.0.1:${ports.monero}/json_rpc`,
    LOCAL_AI_URL: `http://127.0.0.1:${ports.ai}`,
    LOCAL_AI_MODEL: 'model-x',
    PAYMENTS_PROVIDER_URL: `http://127.0.0.1:${ports.provider}`,
    PAYMENTS_PROVIDER_LABEL: undefined,
    RATE_SOURCE_URL: `http://127.0.0.1:${ports.rates}/rates`,
    PROVIDER_TIMEOUT_MS: 400,
    PROVIDER_STATUS_CACHE_MS: 0,
  });
  app = testApp();
});

afterAll(async () => {
  Object.assign(env, settings);
  await app?.close();
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** Every way a body could name an endpoint: a URL, an IP (v4 or v6), a loopback name, a host:port. */
function expectNoEndpoint(where: string, body: unknown) {
  const text = JSON.stringify(body);
  expect(text, where).not.toMatch(/[a-z][a-z0-9+.-]*:\/\//i);
  expect(text, where).not.toMatch(/\b\d{1,3}(?:\.\d{1,3}){3}\b/);
  expect(text, where).not.toMatch(/\blocalhost\b|\.internal\b|\[[0-9a-f:]+\]|\bfd00::|::1\b/i);
  for (const port of Object.values(ports)) {
    expect(text, where).not.toMatch(new RegExp(`(?<![\\w-])${port}(?![\\w-])`));
  }
  // Nor an upstream's own message (`connect ECONNREFUSED 127.0.0.1:8545`, undici's `fetch failed`).
  expect(text, where).not.toMatch(/connect E[A-Z]+|fetch failed/);
}

const pp = () => `/api/v1/${env.PAYMENTS_PROVIDER_SLUG}`;

describe('public provider status', () => {
  it('says configured, reachable, latency and a reason, and names no endpoint', async () => {
    const integrations = await app.request.get('/api/v1/provider-integrations/status').expect(200);
    expectNoEndpoint('provider-integrations', integrations.body);
    const byId = Object.fromEntries(
      (integrations.body.providers as Array<{ id: string }>).map((p) => [p.id, p]),
    );
    expect(byId['chain-rpc:solana']).toMatchObject({ configured: true, reachable: true, reason: 'ok' });
    expect(byId['chain-rpc:evm']).toMatchObject({
      configured: true,
      reachable: false,
      reason: 'unreachable',
    });
    expect(byId['chain-rpc:bitcoin']).toMatchObject({ reachable: false, reason: 'http_error' });
    expect(byId['chain-rpc:monero']).toMatchObject({ reachable: false, reason: 'timeout' });
    expect(byId['local-ai']).toMatchObject({ reachable: true, reason: 'ok', modelListed: true });
    expect(byId['payments-provider']).toMatchObject({ reachable: true, reason: 'ok' });
    expect(byId['price-source']).toMatchObject({ reachable: false, reason: 'unreachable' });
    for (const p of Object.values(byId)) expect(p).not.toHaveProperty('endpoint');

    const intelligence = await app.request.get('/api/intelligence/providers/status').expect(200);
    expectNoEndpoint('intelligence', intelligence.body);
    expect(intelligence.body.providers[0]).toMatchObject({ name: 'local-ai', reachable: true });

    const coordination = await app.request.get('/api/coordination/providers/status').expect(200);
    expectNoEndpoint('coordination', coordination.body);

    const proof = await app.request.get(`/api/v1/${env.LOCAL_AI_SLUG}/runtime-proof`).expect(200);
    expectNoEndpoint('runtime-proof', proof.body);
    expect(proof.body).toMatchObject({ configured: true, probe: { reachable: true, reason: 'ok' } });

    const health = await app.request.get(`${pp()}/health`).expect(200);
    expectNoEndpoint('payments health', health.body);
    expect(health.body).toMatchObject({
      configured: true,
      healthy: true,
      reason: 'ok',
      source: 'payments-provider',
      provider: { ok: true, mock: true },
    });

    const ready = await app.request.get('/api/v1/readiness').expect(503);
    expectNoEndpoint('readiness', ready.body);
    expect(ready.body.checks.chainAdapters).toMatchObject({ ok: false });
    expect(ready.body.checks.chainAdapters.detail).toMatch(/evm: unreachable/);
  });

  it('says a provider is unreachable without saying where it is', async () => {
    const provider = env.PAYMENTS_PROVIDER_URL;
    const ai = env.LOCAL_AI_URL;
    env.PAYMENTS_PROVIDER_URL = `http://127.0.0.1:${ports.evm}`;
    env.LOCAL_AI_URL = `http://127.0.0.1:${ports.monero}`;
    try {
      const health = await app.request.get(`${pp()}/health`).expect(503);
      expectNoEndpoint('payments health, down', health.body);
      expect(health.body).toMatchObject({ reachable: false, healthy: false, reason: 'unreachable' });
      const onchain = await app.request.get(`${pp()}/onchain-proof`).expect(502);
      expectNoEndpoint('onchain proof, down', onchain.body);
      expect(onchain.body.code).toBe('provider_unreachable');
      const proof = await app.request.get(`/api/v1/${env.LOCAL_AI_SLUG}/runtime-proof`).expect(200);
      expectNoEndpoint('runtime-proof, silent', proof.body);
      expect(proof.body.probe).toMatchObject({ reachable: false, reason: 'timeout' });
      const intelligence = await app.request.get('/api/intelligence/providers/status').expect(200);
      expectNoEndpoint('intelligence, silent', intelligence.body);
    } finally {
      env.PAYMENTS_PROVIDER_URL = provider;
      env.LOCAL_AI_URL = ai;
    }
  });

  it('keeps the database’s address out of readiness and health when it is unreachable', async () => {
    const down = testApp({ db: createDb('postgres://postgres@127.0.0.1:1/none') });
    try {
      const ready = await down.request.get('/api/v1/readiness').expect(503);
      expectNoEndpoint('readiness, db down', ready.body);
      expect(ready.body.checks.db).toMatchObject({ ok: false, detail: 'unreachable' });
      const health = await down.request.get('/api/health').expect(200);
      expectNoEndpoint('health, db down', health.body);
      expect(health.body.checks.db).toMatchObject({ ok: false });
    } finally {
      await down.close();
    }
  });
});
