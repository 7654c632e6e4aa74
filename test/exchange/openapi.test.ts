// /openapi.json against the app that serves it: the routes of the exchange table and the documented
// operations are the same set (the hidden event stream aside), and a success reply of each of the 21
// operations — and the problem replies — validate against the document's schemas with a JSON Schema 2020-12
// validator.
import Ajv2020 from 'ajv/dist/2020';
import type { ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { Express } from 'express';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPaidChain, testPaymentsWorker } from './paid';
// Type-only imports load nothing, so these do not read the env before it is set below.
import type { TestApp, TestWorker } from '../helpers';
import type { RouteTables } from '../../api/tables';

// The node comes first: the env the modules parse once must already name it and the treasury.
const { chain, payer, usdc } = await startPaidChain();
// The conformance run's webhook target is a loopback address: this file opts in to private targets.
process.env.LOGISTICS_ALLOW_PRIVATE_TARGETS = 'true';

const { sha256Of, testApp, testJobsWorker, waitForJob } = await import('../helpers');
const { newWallet, registerAgent } = await import('./fixtures');
const { createApp } = await import('../../api/app');
const { buildTables } = await import('../../api/tables');

const OPERATOR = { Authorization: 'Bearer op_test_token_0123456789' };
const DOC_ID = 'urn:proof-exchange:openapi';
/**
 * Served by the exchange table but left out of the document on purpose: the SSE stream has no JSON
 * schema.
 */
const HIDDEN = 'GET /api/jobs/{jobId}/events';

interface Operation {
  operationId: string;
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
}
type Document = { paths: Record<string, Record<string, Operation>> } & Record<string, unknown>;

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle: { stack?: Layer[] };
  rawPath?: unknown;
  slash?: boolean;
}

let app: TestApp;
let tables: RouteTables;
let exchangeRouter: unknown;
let served: Express;
let request: ReturnType<typeof supertest>;
let jobsWorker: TestWorker;
let payments: Awaited<ReturnType<typeof testPaymentsWorker>>;
let doc: Document;

beforeAll(async () => {
  app = testApp();
  // The app under test is built here, from tables we hold, so the router of the exchange table can be told
  // apart in its stack and every request below goes through that same app.
  tables = buildTables();
  const mount = tables.exchange.router.bind(tables.exchange);
  tables.exchange.router = (deps) => (exchangeRouter = mount(deps));
  served = createApp(app.deps, { tables });
  request = supertest(served);
  jobsWorker = testJobsWorker();
  payments = await testPaymentsWorker(app);
  doc = (await request.get('/openapi.json').expect(200)).body as Document;
});
afterAll(async () => {
  await payments?.close();
  await jobsWorker?.close();
  await app?.close();
  await chain.close();
});

const key = (method: string, path: string) => `${method.toUpperCase()} ${path}`;

function documented(): Map<string, { key: string; path: string; method: string; op: Operation }> {
  const out = new Map<string, { key: string; path: string; method: string; op: Operation }>();
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      out.set(op.operationId, { key: key(method, path), path, method, op });
    }
  }
  return out;
}

/** Every route in the app's stack, in order, with the top-level router it belongs to. */
function servedRoutes(): Array<{ key: string; owner: unknown }> {
  const out: Array<{ key: string; owner: unknown }> = [];
  const walk = (stack: Layer[], prefix: string, owner: unknown) => {
    for (const layer of stack) {
      if (layer.route) {
        const path = `${prefix}${layer.route.path}`.replace(/:(\w+)/g, '{$1}');
        for (const method of Object.keys(layer.route.methods)) out.push({ key: key(method, path), owner });
      } else if (layer.handle.stack) {
        const mount = layer.slash || typeof layer.rawPath !== 'string' ? '' : layer.rawPath;
        walk(layer.handle.stack, prefix + mount, owner ?? layer.handle);
      }
    }
  };
  walk((served as unknown as { router: { stack: Layer[] } }).router.stack, '', undefined);
  return out;
}

describe('routes and document', () => {
  it('documents every route of table A but the event stream, and serves every documented operation', () => {
    const routes = servedRoutes();
    expect(routes.some((r) => r.owner === exchangeRouter)).toBe(true);
    const tableA = new Set(routes.filter((r) => r.owner === exchangeRouter).map((r) => r.key));
    const ops = new Set([...documented().values()].map((o) => o.key));
    expect(ops.size).toBe(21);
    expect([...tableA].filter((k) => !ops.has(k))).toEqual([HIDDEN]);
    expect([...ops].filter((k) => !tableA.has(k))).toEqual([]);
    // Nothing else in the app answers a documented method and path (it would shadow or fork it).
    const elsewhere = routes.filter(
      (r) => r.owner !== exchangeRouter && (ops.has(r.key) || r.key === HIDDEN),
    );
    expect(elsewhere).toEqual([]);
    // The exception is the table's own choice, and it is the only hidden route.
    const hidden = tables.exchange.list().filter((r) => r.hidden);
    expect(hidden.map((r) => key(r.method, r.path))).toEqual([HIDDEN]);
    expect(doc.paths['/api/jobs/{jobId}/events']).toBeUndefined();
  });
});

// JSON Schema validation against the document itself: it is added to ajv whole, so the operations'
// `#/components/schemas/…` references resolve exactly as written. Two readings of each schema: as
// published (objects open, as a client sees them), and closed (`unevaluatedProperties: false` on every
// object with properties), which also fails on a field the reply carries but the document does not name.
function validators(document: Document) {
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  addFormats(ajv);
  ajv.addVocabulary(['openapi', 'info', 'servers', 'paths', 'components', 'webhooks', 'tags', 'security']);
  ajv.addSchema({ ...document, $id: DOC_ID });
  const cache = new Map<string, ValidateFunction>();
  return (pointer: string) => {
    let validate = cache.get(pointer);
    if (!validate) {
      validate = ajv.compile({ $ref: `${DOC_ID}#${pointer}` });
      cache.set(pointer, validate);
    }
    return validate;
  };
}

const VALUE_KEYWORDS = new Set(['enum', 'const', 'default', 'examples', 'example', 'required']);

// A member of an `allOf` is left open (it sees only its own properties); the `allOf` itself is closed.
function closed(schema: unknown, close = true): unknown {
  if (Array.isArray(schema)) return schema.map((s) => closed(s));
  if (!schema || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'properties')
      out[k] = Object.fromEntries(Object.entries(v as object).map(([name, s]) => [name, closed(s)]));
    else if (k === 'allOf') out[k] = (v as unknown[]).map((s) => closed(s, false));
    else out[k] = VALUE_KEYWORDS.has(k) ? v : closed(v);
  }
  if (close && (out.properties || out.allOf) && out.additionalProperties === undefined)
    out.unevaluatedProperties = false;
  return out;
}

function closedDocument(document: Document): Document {
  const components = document.components as { schemas: Record<string, unknown> };
  const paths: Document['paths'] = {};
  for (const [path, methods] of Object.entries(document.paths)) {
    paths[path] = {};
    for (const [method, op] of Object.entries(methods)) {
      const responses: Operation['responses'] = {};
      for (const [status, r] of Object.entries(op.responses)) {
        responses[status] = r.content
          ? {
              content: Object.fromEntries(
                Object.entries(r.content).map(([ct, c]) => [ct, { schema: closed(c.schema) }]),
              ),
            }
          : {};
      }
      paths[path]![method] = { operationId: op.operationId, responses };
    }
  }
  return {
    ...document,
    components: {
      ...components,
      schemas: Object.fromEntries(Object.entries(components.schemas).map(([n, c]) => [n, closed(c)])),
    },
    paths,
  };
}

const pointerPart = (part: string) => part.replace(/~/g, '~0').replace(/\//g, '~1');

describe('replies validate against the document', () => {
  let open: ReturnType<typeof validators>;
  let strict: ReturnType<typeof validators>;
  const covered = new Set<string>();

  beforeAll(() => {
    open = validators(doc);
    strict = validators(closedDocument(doc));
  });

  /** Validates a reply against its operation's schema for that status (or `default`); returns the body. */
  function conforms<R extends { status: number; headers: Record<string, string>; body: unknown }>(
    res: R,
    operationId: string,
  ): R['body'] {
    const found = documented().get(operationId);
    expect(found, `${operationId} is not in the document`).toBeDefined();
    const { path, method, op } = found!;
    const status = op.responses[String(res.status)] ? String(res.status) : 'default';
    const contentType = String(res.headers['content-type']).split(';')[0]!.trim();
    const schema = op.responses[status]?.content?.[contentType];
    expect(schema, `${operationId} ${res.status} ${contentType} is not documented`).toBeDefined();
    const pointer = ['paths', path, method, 'responses', status, 'content', contentType, 'schema']
      .map(pointerPart)
      .join('/');
    for (const [reading, validator] of [
      ['published', open],
      ['closed', strict],
    ] as const) {
      const validate = validator(`/${pointer}`);
      const ok = validate(res.body);
      expect(
        ok,
        `${operationId} ${res.status} (${reading} schema): ${JSON.stringify(validate.errors, null, 1)}`,
      ).toBe(true);
    }
    if (res.status < 300) covered.add(operationId);
    return res.body;
  }

  it('each of the 21 operations answers as documented on its success path', async () => {
    for (const [path, id] of [
      ['/api/health', 'health'],
      ['/api/services', 'services'],
      ['/api/pricing', 'pricing'],
      ['/api/discovery', 'discovery'],
      ['/api/acquisition', 'acquisition'],
      ['/api/logistics/capabilities', 'logisticsCapabilities'],
      ['/api/treasury/status', 'treasuryStatus'],
    ] as const) {
      conforms(await request.get(path).expect(200), id);
    }
    // With the operator token, treasuryStatus adds inflows and balances read from the node.
    const treasury = conforms(
      await request.get('/api/treasury/status').set(OPERATOR).expect(200),
      'treasuryStatus',
    );
    expect(treasury.details).toBe(true);

    const registered = conforms(
      await request
        .post('/api/registry/register')
        .send({
          name: 'Schema Seller',
          description: 'sells attestations',
          capabilities: ['attest.batch'],
          tags: ['notary'],
          endpointUrl: 'https://seller.example/handoff',
          walletPublicKey: newWallet().publicKey,
        })
        .expect(201),
      'registerAgent',
    );
    const seller = {
      id: registered.agent.id as string,
      auth: { Authorization: `Bearer ${registered.apiKey}` },
    };
    // From a network of its own: it creates a job under the seller's referral code below.
    const buyer = await registerAgent({ ...app, request }, {}, '198.51.100.31');
    conforms(await request.get('/api/registry/search?q=attestations&tag=notary').expect(200), 'searchAgents');

    const { listing } = conforms(
      await request
        .post('/api/marketplace/listings')
        .set(seller.auth)
        .send({
          title: 'Schema-checked attestations',
          description: 'Batch attestation of digests.',
          tags: ['notary'],
          priceUsdCents: 50,
          asset: 'USDC-ETH',
          serviceEndpoint: 'https://seller.example/notary',
        })
        .expect(201),
      'publishListing',
    );
    conforms(await request.get('/api/marketplace/listings?q=attestations').expect(200), 'searchListings');

    const { agreement } = conforms(
      await request
        .post('/api/agreements')
        .set(seller.auth)
        .send({
          counterpartyAgentId: buyer.id,
          service: 'attest.batch',
          listingId: listing.id,
          priceUsdCents: 50,
          asset: 'USDC-ETH',
          deadline: new Date(Date.now() + 86_400_000).toISOString(),
          sla: { deliveryWithinSeconds: 600, remedy: 'refund' },
        })
        .expect(201),
      'createAgreement',
    );
    conforms(
      await request.get(`/api/agreements/${agreement.id}`).set(buyer.auth).expect(200),
      'getAgreement',
    );
    const accepted = conforms(
      await request
        .post(`/api/agreements/${agreement.id}/accept`)
        .set(buyer.auth)
        .send({ termsHash: agreement.termsHash, signature: buyer.wallet.sign(agreement.termsHash) })
        .expect(200),
      'acceptAgreement',
    );
    expect(accepted.agreement.status).toBe('accepted');

    const { referral } = conforms(
      await request.post('/api/referrals').set(seller.auth).send({ note: 'schema' }).expect(201),
      'createReferral',
    );

    // A free job and a priced one, both answered with the createJob schema.
    const free = conforms(
      await request
        .post('/api/jobs')
        .send({ service: 'attest.timestamp', input: { digest: await sha256Of('free') } })
        .expect(202),
      'createJob',
    );
    expect(free.payment).toBeUndefined();
    const created = conforms(
      await request
        .post('/api/jobs')
        .set(buyer.auth)
        .set('X-Referral-Code', referral.code)
        .send({ service: 'attest.batch', input: { digests: [await sha256Of('priced')] } })
        .expect(402),
      'createJob',
    );
    const jobId = created.job.id as string;
    expect(created.accessToken).toMatch(/^jt_/);
    // The job opens with its access token, or with the key that created it.
    const jobToken = { Authorization: `Bearer ${created.accessToken}` };
    const unpaid = conforms(await request.get(`/api/jobs/${jobId}`).set(jobToken).expect(200), 'jobStatus');
    expect(unpaid.job.status).toBe('awaiting_payment');

    // The USDC quote's own amount: the price plus the offset that tells it from every other open quote.
    const quote = created.payment.quotes.find((q: { asset: string }) => q.asset === 'USDC-ETH');
    const tx = await chain.transferToken(usdc, payer, quote.payTo, BigInt(quote.amount));
    await chain.mine(1);
    const submitted = conforms(
      await request
        .post(`/api/jobs/${jobId}/payment`)
        .set(buyer.auth)
        .send({ asset: 'USDC-ETH', txRef: tx, payer })
        .expect(202),
      'submitPayment',
    );
    expect(submitted.payment.status).toBe('pending');
    expect((await waitForJob(request, jobId, created.accessToken)).status).toBe('succeeded');
    const done = conforms(await request.get(`/api/jobs/${jobId}`).set(buyer.auth).expect(200), 'jobStatus');
    expect(done.job.result).toBeTruthy();
    conforms(await request.get(new URL(done.job.links.receipt).pathname).expect(200), 'getReceipt');

    for (const body of [
      { jobId, method: 'polling' },
      { jobId, method: 'webhook', targetUrl: 'http://127.0.0.1:9/hook' },
    ]) {
      conforms(
        await request.post('/api/logistics/request').set(buyer.auth).send(body).expect(202),
        'requestLogistics',
      );
    }

    const revenue = conforms(await request.get('/api/revenue').set(OPERATOR).expect(200), 'revenueSummary');
    expect(revenue.byReferral).toHaveLength(1);
    // Also with what the operator reads: inflows now listed.
    conforms(await request.get('/api/treasury/status').set(OPERATOR).expect(200), 'treasuryStatus');

    // The hidden stream is served all the same.
    const events = await request.get(`/api/jobs/${jobId}/events`).set(jobToken).expect(200);
    expect(events.headers['content-type']).toMatch(/^text\/event-stream/);

    expect([...covered].sort()).toEqual([...documented().keys()].sort());
  });

  it('problem replies validate against their documented status (or the default)', async () => {
    const cases: Array<[string, () => Promise<supertest.Response>, number]> = [
      ['searchAgents', () => request.get('/api/registry/search?limit=0'), 400],
      ['publishListing', () => request.post('/api/marketplace/listings').send({}), 401],
      ['getReceipt', () => request.get('/api/receipts/rcpt_01m7ycenb0y37det98dds34qjx'), 404],
      [
        'createJob',
        () =>
          request
            .post('/api/jobs?ref=NO-SUCH-CODE')
            .send({ service: 'attest.timestamp', input: { digest: '0'.repeat(64) } }),
        422,
      ],
      ['revenueSummary', () => request.get('/api/revenue'), 401],
    ];
    for (const [operationId, send, status] of cases) {
      const res = await send();
      expect(res.status, JSON.stringify(res.body)).toBe(status);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      conforms(res, operationId);
    }
  });
});
