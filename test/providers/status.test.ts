// The /api/v1 status routes: readiness with the chain adapters, the signed local AI runtime proof, the
// privacy matrix and claims (kept in step with the tests they name), provider integrations, the
// private-payments routes when no provider is set, and a real chain follower on ganache.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChain } from '../payments/ganache';
import type { Chain } from '../payments/ganache';
import type { TestApp } from '../helpers';
import { expectProblem } from '../licensing/helpers';

const chain: Chain = await startChain(1337);
const [payer, treasury, stranger] = chain.accounts as [string, string, string];
const usdc = await chain.deployToken(6, 10n ** 15n);

/** Ollama's `GET /api/tags` answer for one model with this digest (hex, as Ollama gives it). */
const tags = (hex: string) =>
  JSON.stringify({
    models: [
      {
        name: 'llama-3.1-8b-instruct:latest',
        model: 'llama-3.1-8b-instruct:latest',
        digest: hex,
        size: 4920753328,
        details: { format: 'gguf', family: 'llama', quantization_level: 'Q4_K_M' },
      },
    ],
  });

/**
 * A loopback server: forwards JSON-RPC to ganache unless `down`, and serves local AI runtimes: `/ai`
 * speaks OpenAI-compatible `/v1/models` and Ollama's `/api/tags` with the declared digest, `/ai-other`
 * the same with another digest, `/ai-plain` only `/v1/models` (no digest to observe).
 */
function startFrontend() {
  const state = { down: false };
  const server = http.createServer((req, res) => {
    const json = (status: number, body: string) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(body);
    };
    if (/^\/ai(-other|-plain)?\/v1\/models$/.test(req.url ?? '')) {
      return json(
        200,
        JSON.stringify({ object: 'list', data: [{ id: 'llama-3.1-8b-instruct', object: 'model' }] }),
      );
    }
    if (req.url === '/ai/api/tags') return json(200, tags('ab'.repeat(32)));
    if (req.url === '/ai-other/api/tags') return json(200, tags('cd'.repeat(32)));
    if (req.url?.startsWith('/ai-plain/')) return json(404, '{"error":"not found"}');
    if (state.down) {
      res.writeHead(503);
      return res.end();
    }
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', async () => {
      const answer = await fetch(chain.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(await answer.text());
    });
    return undefined;
  });
  return new Promise<{ url: string; state: typeof state; close(): Promise<void> }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        state,
        close: () => new Promise((r) => server.close(() => r())),
      }),
    ),
  );
}

const front = await startFrontend();
const DIGEST = `sha256:${'ab'.repeat(32)}`;
Object.assign(process.env, {
  EVM_RPC_URL: `${front.url}/rpc`,
  EVM_CONFIRMATIONS: '1',
  CHAIN_RPC_RETRIES: '0',
  CHAIN_RPC_TIMEOUT_MS: '1000',
  PROVIDER_TIMEOUT_MS: '1000',
  TREASURY_EVM: treasury,
  ASSETS_JSON: JSON.stringify({
    ETH: { network: 'eip155:1337' },
    'USDC-ETH': { network: 'eip155:1337', contract: usdc },
  }),
  RATES_USD: 'ETH=2000',
  LOCAL_AI_URL: `${front.url}/ai`,
  LOCAL_AI_MODEL: 'llama-3.1-8b-instruct',
  LOCAL_AI_MODEL_DIGEST: DIGEST,
  CHAIN_FOLLOWER_INTERVAL_MS: '50',
});

const { eventually, testApp } = await import('../helpers');
const { canonicalJson } = await import('../../shared/platform/canonical');
const { verifyEd25519 } = await import('../../shared/platform/crypto');
const { createChainFollower, startChainFollower } = await import('../../workers/chain-follower');

let app: TestApp;
beforeAll(() => {
  app = testApp();
});
afterAll(async () => {
  await app?.close();
  await front.close();
  await chain.close();
});

describe('status routes', () => {
  it('checks the configured chain adapters for readiness and answers 503 while one is down', async () => {
    const up = await app.request.get('/api/v1/readiness');
    expect(up.body.checks.chainAdapters).toMatchObject({ ok: true });
    expect(up.body.checks.chainAdapters.detail).toMatch(/^evm \d/);
    expect(up.status).toBe(Object.values(up.body.checks).every((c) => (c as { ok: boolean }).ok) ? 200 : 503);

    front.state.down = true;
    try {
      const down = await app.request.get('/api/v1/readiness').expect(503);
      expect(down.body.ready).toBe(false);
      expect(down.body.checks.chainAdapters).toMatchObject({ ok: false });
      expect(down.body.checks.chainAdapters.detail).toMatch(/^evm: /);
      expect(down.headers['retry-after']).toBe('5');
    } finally {
      front.state.down = false;
    }
  });

  it('signs a statement of the local AI runtime with the service key', async () => {
    const res = await app.request.get('/api/v1/local-ai/runtime-proof').expect(200);
    const { signature, publicKey, ...statement } = res.body;
    expect(statement).toMatchObject({
      type: 'proof-exchange.local-ai-runtime/v1',
      configured: true,
      model: 'llama-3.1-8b-instruct',
      modelDigest: DIGEST,
      digest: { configured: DIGEST, observed: DIGEST, source: 'GET /api/tags', status: 'matches' },
      probe: { reachable: true, modelListed: true, reason: 'ok' },
    });
    // Where the runtime listens is the operator's: the public statement does not say.
    expect(JSON.stringify(statement)).not.toContain(front.url);
    expect(typeof statement.probe.latencyMs).toBe('number');
    const health = await app.request.get('/api/health').expect(200);
    expect(JSON.stringify(health.body)).toContain(publicKey);
    expect(verifyEd25519(publicKey, canonicalJson(statement), signature)).toBe(true);
    expect(
      verifyEd25519(publicKey, canonicalJson({ ...statement, modelDigest: 'sha256:00' }), signature),
    ).toBe(false);
  });

  it('says whether the model digest was observed from the runtime or only configured', async () => {
    const { localAiRuntimeProof } = await import('../../shared/providers/runtime-proof');
    const { env } = await import('../../shared/platform/env');
    const { serviceSigningKey } = await import('../../shared/platform/keys');
    const key = serviceSigningKey();
    const at = (path: string, digest: string | null = DIGEST) =>
      localAiRuntimeProof(key, {
        ...env,
        LOCAL_AI_URL: `${front.url}${path}`,
        LOCAL_AI_MODEL_DIGEST: digest ?? undefined,
      });

    const other = await at('/ai-other');
    expect(other).toMatchObject({
      modelDigest: `sha256:${'cd'.repeat(32)}`,
      digest: { configured: DIGEST, observed: `sha256:${'cd'.repeat(32)}`, status: 'mismatch' },
    });
    const { signature, ...statement } = other as typeof other & { signature: string };
    expect(verifyEd25519(key.publicKey, canonicalJson(statement), signature)).toBe(true);

    // A runtime that offers no digest: the statement says the digest is configured, not observed.
    const plain = await at('/ai-plain');
    expect(plain).toMatchObject({
      modelDigest: DIGEST,
      digest: { configured: DIGEST, observed: null, source: null, status: 'configured_not_observed' },
      probe: { reachable: true, modelListed: true },
    });
    expect((plain as { digest: { detail: string } }).digest.detail).toMatch(/configured .*not observed/);
    expect(await at('/ai-plain', null)).toMatchObject({
      modelDigest: null,
      digest: { status: 'unknown' },
    });
    expect(await at('/ai', null)).toMatchObject({
      modelDigest: DIGEST,
      digest: { configured: null, observed: DIGEST, status: 'observed' },
    });
  });

  it('describes public, private and where it runs for every feature', async () => {
    const res = await app.request.get('/api/v1/privacy-execution-matrix').expect(200);
    const features = res.body.features.map((f: { feature: string }) => f.feature);
    expect(features).toEqual([
      'agent-jobs',
      'payments',
      'proof-workflows',
      'blind-policy',
      'governance',
      'treasury',
      'auctions',
      'checkout',
      'private-payments-login',
    ]);
    for (const f of res.body.features) {
      expect(f.public.length).toBeGreaterThan(0);
      expect(f.private.length).toBeGreaterThan(0);
      expect(f.executes.length).toBeGreaterThan(0);
      for (const place of f.executes) expect(res.body.places).toContain(place);
    }
  });

  it('keeps every privacy claim tied to a test that exists', async () => {
    const res = await app.request.get('/api/v1/privacy-execution-claims').expect(200);
    expect(res.body.claims.length).toBeGreaterThanOrEqual(17);
    const ids = new Set<string>();
    for (const claim of res.body.claims as Array<{
      id: string;
      enforcement: string;
      test: { file: string; name: string };
    }>) {
      expect(ids.has(claim.id)).toBe(false);
      ids.add(claim.id);
      expect(claim.enforcement.length).toBeGreaterThan(10);
      expect(claim.test.file).toMatch(/^test\/.+\.test\.ts$/);
      expect(claim.test.name.length, `${claim.id} names no test`).toBeGreaterThan(0);
      const source = readFileSync(claim.test.file, 'utf8');
      // The name as the first argument of it(…) or it.each(…)(…); a skipped or todo test does not count.
      const named = ["'", '"', '`'].some((q) => {
        for (let at = source.indexOf(`${q}${claim.test.name}${q}`); at >= 0;) {
          if (/\bit(?:\.each[\s\S]*\))?\(\s*$/.test(source.slice(Math.max(0, at - 200), at))) return true;
          at = source.indexOf(`${q}${claim.test.name}${q}`, at + 1);
        }
        return false;
      });
      expect(named, `${claim.test.file} has no test named "${claim.test.name}"`).toBe(true);
    }
  });

  it('probes every external provider with its latency', async () => {
    const res = await app.request.get('/api/v1/provider-integrations/status').expect(200);
    const byId = Object.fromEntries(res.body.providers.map((p: { id: string }) => [p.id, p]));
    expect(Object.keys(byId).sort()).toEqual([
      'chain-rpc:bitcoin',
      'chain-rpc:evm',
      'chain-rpc:monero',
      'chain-rpc:solana',
      'local-ai',
      'payments-provider',
      'price-source',
    ]);
    expect(byId['chain-rpc:evm']).toMatchObject({
      configured: true,
      reachable: true,
      reason: 'ok',
      treasuryConfigured: true,
    });
    expect(JSON.stringify(res.body)).not.toContain(front.url);
    expect(typeof byId['chain-rpc:evm'].latencyMs).toBe('number');
    expect(byId['chain-rpc:solana']).toMatchObject({ configured: false, reachable: null, latencyMs: null });
    expect(byId['local-ai']).toMatchObject({ configured: true, reachable: true, modelListed: true });
    expect(byId['payments-provider']).toMatchObject({ configured: false, reachable: null });
    expect(byId['price-source']).toMatchObject({ configured: true, source: 'config', reachable: null });
  });

  it('says clearly that no private-payments provider is configured', async () => {
    expect((await app.request.get('/api/v1/private-payments/health').expect(200)).body).toMatchObject({
      configured: false,
    });
    expect((await app.request.get('/api/v1/private-payments/onchain-proof').expect(200)).body).toMatchObject({
      configured: false,
    });
    expectProblem(
      await app.request.get(
        '/api/v1/private-payments/challenge?wallet=EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
      ),
      503,
      'payments_provider_unconfigured',
    );
  });

  it('lists the routes in the platform OpenAPI document', async () => {
    const doc = (await app.request.get('/openapi/platform.json').expect(200)).body;
    for (const path of [
      '/api/v1/commercial/checkout/status',
      '/api/v1/commercial/checkout/prepare',
      '/api/v1/commercial/checkout/verify',
      '/api/v1/payment-gate/random/prepare',
      '/api/v1/local-ai/runtime-proof',
      '/api/v1/privacy-execution-matrix',
      '/api/v1/privacy-execution-claims',
      '/api/v1/provider-integrations/status',
      '/api/v1/rpc/stream/stats',
      '/api/v1/private-payments/onchain-proof',
      '/api/v1/private-payments/health',
      '/api/v1/private-payments/challenge',
      '/api/v1/private-payments/balances/{wallet}',
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
  });
});

describe('chain follower', () => {
  it('follows new blocks, counts transfers to the treasury, and reports lag, errors and reconnects', async () => {
    const follower = createChainFollower(app.deps.db);
    await follower.tick(); // starts at the head
    const native = await chain.sendEth(payer, treasury, 10n ** 15n);
    const token = await chain.transferToken(usdc, payer, treasury, 1_000_000n);
    await chain.sendEth(payer, stranger, 10n ** 15n); // not ours
    await chain.mine(2);
    await follower.tick();

    const stats = (await app.request.get('/api/v1/rpc/stream/stats').expect(200)).body;
    expect(stats.enabled).toBe(true);
    const [f] = stats.followers;
    // The stats are public: they never say where the follower reads.
    expect(JSON.stringify(stats)).not.toContain(new URL(front.url).host);
    const head = Number(BigInt(await chain.rpc<string>('eth_blockNumber')));
    expect(f).toMatchObject({
      network: 'eip155:1337',
      family: 'evm',
      live: true,
      healthy: true,
      eventsSeen: 2,
      lastBlock: head,
      headBlock: head,
      lagBlocks: 0,
      errors: 0,
      reconnects: 0,
    });
    expect(f.blocksSeen).toBeGreaterThanOrEqual(5);
    expect(stats.recentEvents.map((e: { txRef: string }) => e.txRef).sort()).toEqual([native, token].sort());
    expect(stats.recentEvents.find((e: { txRef: string }) => e.txRef === token)).toMatchObject({
      token: usdc.toLowerCase(),
      amount: '1000000',
    });

    front.state.down = true;
    await follower.tick();
    front.state.down = false;
    const failing = (await app.request.get('/api/v1/rpc/stream/stats')).body.followers[0];
    expect(failing).toMatchObject({ healthy: false, errors: 1, reconnects: 0 });
    expect(failing.lastError).toBe('http_error (HTTP 503)');
    expect(JSON.stringify(failing)).not.toContain(new URL(front.url).host);
    await chain.mine(1);
    await follower.tick();
    const back = (await app.request.get('/api/v1/rpc/stream/stats')).body.followers[0];
    expect(back).toMatchObject({
      healthy: true,
      errors: 1,
      reconnects: 1,
      lastBlock: head + 1,
      eventsSeen: 2,
    });
    await follower.stop();

    // The follower as the worker runs it: on a timer, and it stops cleanly.
    const running = startChainFollower(app.deps.db)!;
    expect(running).toBeDefined();
    await chain.sendEth(payer, treasury, 10n ** 15n);
    await eventually(async () => {
      const s = (await app.request.get('/api/v1/rpc/stream/stats')).body.followers[0];
      return s.eventsSeen === 3 ? s : undefined;
    });
    await running.stop();
  });
});
