// discovery, the A2A agent card, acquisition, logistics capabilities and the OpenAPI document's exact
// table A operations.
import { AgentCard } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { licenseTiers, parsePriceOverrides } from '../../shared/licensing/tiers';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';

let app: TestApp;
beforeAll(() => {
  app = testApp();
});
afterAll(() => app.close());

const TABLE_A = [
  'health',
  'services',
  'pricing',
  'createJob',
  'jobStatus',
  'submitPayment',
  'getReceipt',
  'registerAgent',
  'searchAgents',
  'discovery',
  'acquisition',
  'createReferral',
  'searchListings',
  'publishListing',
  'requestLogistics',
  'logisticsCapabilities',
  'createAgreement',
  'getAgreement',
  'acceptAgreement',
  'revenueSummary',
  'treasuryStatus',
];

describe('OpenAPI', () => {
  it('lists exactly the 21 operations of table A, at their paths, with version 1.3.0', async () => {
    const doc = (await app.request.get('/openapi.json').expect(200)).body;
    expect(doc.info.version).toBe('1.3.0');
    const ops: Array<[string, string, string]> = [];
    for (const [path, methods] of Object.entries(
      doc.paths as Record<string, Record<string, { operationId: string }>>,
    )) {
      for (const [method, op] of Object.entries(methods))
        ops.push([op.operationId, method.toUpperCase(), path]);
    }
    expect(ops.map((o) => o[0]).sort()).toEqual([...TABLE_A].sort());
    const at = Object.fromEntries(ops.map(([id, m, p]) => [id, `${m} ${p}`]));
    expect(at).toMatchObject({
      registerAgent: 'POST /api/registry/register',
      searchAgents: 'GET /api/registry/search',
      discovery: 'GET /api/discovery',
      acquisition: 'GET /api/acquisition',
      createReferral: 'POST /api/referrals',
      searchListings: 'GET /api/marketplace/listings',
      publishListing: 'POST /api/marketplace/listings',
      requestLogistics: 'POST /api/logistics/request',
      logisticsCapabilities: 'GET /api/logistics/capabilities',
      createAgreement: 'POST /api/agreements',
      getAgreement: 'GET /api/agreements/{agreementId}',
      acceptAgreement: 'POST /api/agreements/{agreementId}/accept',
      revenueSummary: 'GET /api/revenue',
      treasuryStatus: 'GET /api/treasury/status',
    });
    // Request and response schemas are described, and the agent-key routes say so.
    const publish = doc.paths['/api/marketplace/listings'].post;
    expect(publish.requestBody.content['application/json'].schema).toBeTruthy();
    expect(publish.responses['201'].content['application/json'].schema).toBeTruthy();
    expect(publish.security).toEqual([{ agentKey: [] }]);
    expect(doc.paths['/api/revenue'].get.security).toEqual([{ operatorToken: [] }]);
    expect(doc.paths['/api/registry/search'].get.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['q', 'capability', 'tag', 'limit', 'cursor']),
    );
  });
});

describe('discovery', () => {
  it('is the agent card: version, every endpoint, services with schemas, assets and the receipt key', async () => {
    const card = (await app.request.get('/api/discovery').expect(200)).body;
    expect(card.version).toBe('1.3.0');
    expect(card.openapi).toMatch(/\/openapi\.json$/);
    expect(card.endpoints.map((e: { operationId: string }) => e.operationId).sort()).toEqual(
      [...TABLE_A].sort(),
    );
    const timestamp = card.services.find((s: { id: string }) => s.id === 'attest.timestamp');
    expect(timestamp.inputSchema.properties.digest).toBeTruthy();
    expect(card.payments.assets).toHaveLength(9);
    for (const a of card.payments.assets) expect(typeof a.enabled).toBe('boolean');
    const health = (await app.request.get('/api/health').expect(200)).body;
    expect(card.receiptPublicKey.publicKey).toBe(health.signingKey.publicKey);
  });

  it('is also served as an A2A 1.0 agent card that the A2A SDK reads (test/a2a/discovery.test.ts uses it)', async () => {
    const res = await app.request.get('/.well-known/agent-card.json').expect(200);
    const card = AgentCard.fromJSON(res.body);
    expect(card).toMatchObject({ name: 'proof-exchange', version: '1.3.0' });
    expect(card.supportedInterfaces.map((i) => [i.protocolBinding, i.protocolVersion])).toEqual([
      ['JSONRPC', '1.0'],
      ['HTTP+JSON', '1.0'],
    ]);
    for (const i of card.supportedInterfaces) expect(i.url).toMatch(/^http.*\/a2a\/(jsonrpc|rest)$/);
    // A request is a data part; plain text is answered with a guide to the skills (docs/a2a.md).
    expect(card.defaultInputModes).toEqual(['application/json', 'text/plain']);
    expect(card.skills.map((s) => s.id)).toContain('attest.timestamp');
    expect(card.securityRequirements).toEqual([]);
  });
});

describe('acquisition', () => {
  it('shows the four license tiers, the 14-day trial, the checkout route and referral terms', async () => {
    const body = (await app.request.get('/api/acquisition').expect(200)).body;
    expect(body.licenses.map((l: { type: string }) => l.type)).toEqual([
      'TRIAL',
      'Starter',
      'Business',
      'Enterprise',
    ]);
    expect(body.licenses[0]).toMatchObject({ priceUsdCents: 0, periodDays: 14 });
    for (const l of body.licenses.slice(1)) expect(l.priceUsdCents).toBeGreaterThan(0);
    expect(body.trial).toMatchObject({ days: 14, perOrganization: 1 });
    expect(body.checkout.prepare).toMatch(/\/api\/v1\/commercial\/checkout\/prepare$/);
    expect(body.referrals.commissionBps).toBe(1000);
    expect(body.referrals.create).toMatch(/\/api\/referrals$/);
  });

  it('takes tier prices from LICENSE_PRICES_USD_CENTS', () => {
    expect(parsePriceOverrides('Business=25000,Starter=1')).toEqual({ Business: 25000, Starter: 1 });
    const tiers = licenseTiers('Business=25000');
    expect(tiers.find((t) => t.type === 'Business')!.priceUsdCents).toBe(25000);
    expect(tiers.find((t) => t.type === 'Starter')!.priceUsdCents).toBe(4900);
  });
});

describe('logisticsCapabilities', () => {
  it('reports the methods available now; anchoring is not configured', async () => {
    const body = (await app.request.get('/api/logistics/capabilities').expect(200)).body;
    const methods = Object.fromEntries(
      body.methods.map((m: { method: string; available: boolean }) => [m.method, m.available]),
    );
    expect(methods).toEqual({ webhook: true, polling: true, agent_handoff: true, onchain_anchoring: false });
    expect(body.limits.attempts).toBeGreaterThan(1);
    expect(body.signature.headers).toContain('X-Delivery-Signature');
  });
});
