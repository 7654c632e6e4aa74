// The two OpenAPI documents the service serves (/openapi.json, /openapi/platform.json): Redocly's
// recommended ruleset finds no error in them; every operation's declared security is what the route
// really does (each credential it lists is taken, none is needed where it lists an empty one, every
// other is refused with 401); every problem reply met on the way is documented with its status and
// code; the routes of table B name the API_URL server; and the start banner prints each address under
// the base of the table that serves it.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { banner } from '../../dev/stack/banner';
import { grantLicense, testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { registerAgent } from '../exchange/fixtures';
import { buildTables } from '../../api/tables';
import { redoclyLint, writeDocuments } from '../../scripts/openapi-lint';

const URLS = {
  base: 'https://agents.proof-exchange.test',
  api: 'https://api.proof-exchange.test',
  site: 'https://proof-exchange.test',
};
const OPERATOR = { Authorization: 'Bearer op_test_token_0123456789' };

type Security = Array<Record<string, string[]>>;
interface Operation {
  operationId: string;
  security?: Security;
  responses: Record<
    string,
    {
      content?: Record<
        string,
        { schema: { allOf?: Array<{ properties?: { code?: { enum?: string[] } } }> } }
      >;
    }
  >;
}
interface Document {
  servers: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation> & { servers?: Array<{ url: string }> }>;
  components: { securitySchemes: Record<string, { type: string; scheme: string }> };
  tags: Array<{ name: string }>;
  info: { license?: { name: string } };
}

let app: TestApp;
let exchange: Document;
let platform: Document;

beforeAll(async () => {
  app = testApp({ urls: URLS });
  // Every route is sent credentials it does not take (a provider's token where ours is due): not a
  // guess at one, so the per-network failure budget (test/security/auth-failures.test.ts) is lifted.
  app.deps.rateLimit = { ...app.deps.rateLimit, authFailuresPerMinute: 1_000_000 };
  exchange = (await app.request.get('/openapi.json').expect(200)).body as Document;
  platform = (await app.request.get('/openapi/platform.json').expect(200)).body as Document;
});
afterAll(() => app?.close());

const METHODS = new Set(['get', 'post', 'put', 'delete']);
function operations(doc: Document) {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, op]) => ({ path, method, op: op as Operation })),
  );
}

describe('Redocly lint (recommended ruleset)', () => {
  const lint = (file: string) => {
    const run = redoclyLint([file], 'json');
    expect(run.status === 0 || run.status === 1, run.stderr).toBe(true);
    return JSON.parse(run.stdout) as {
      totals: { errors: number; warnings: number };
      problems: Array<{ ruleId: string; message: string }>;
    };
  };

  it('finds no error and no warning in either document', { timeout: 60_000 }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'px-openapi-'));
    try {
      for (const file of writeDocuments(dir)) {
        const report = lint(file);
        expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
        expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
      }
      // The harness does find errors: the same document with one operation's security left out.
      const [file] = writeDocuments(dir);
      const doc = JSON.parse(readFileSync(file, 'utf8')) as Document;
      delete doc.paths['/api/revenue']!.get!.security;
      writeFileSync(file, JSON.stringify(doc));
      const broken = lint(file);
      expect(broken.totals.errors).toBeGreaterThan(0);
      expect(broken.problems.map((p) => p.ruleId)).toContain('security-defined');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('serves the documents the lint checks: license, servers, unique operationIds, declared tags', () => {
    const ids = [...operations(exchange), ...operations(platform)].map((o) => o.op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const doc of [exchange, platform]) {
      expect(doc.info.license?.name).toBeTruthy();
      const tags = new Set(doc.tags.map((t) => t.name));
      for (const { op } of operations(doc)) {
        expect(op.security, op.operationId).toBeDefined();
        for (const tag of (op as { tags?: string[] }).tags ?? []) expect(tags.has(tag), tag).toBe(true);
      }
    }
    expect(exchange.servers).toEqual([{ url: URLS.base, description: expect.any(String) }]);
    expect(platform.servers).toEqual([{ url: URLS.site, description: expect.any(String) }]);
  });
});

describe('table B at API_URL', () => {
  // Spec table B (and D's balance query), with the default slugs: a generated client must send these to
  // the API server, not to the site.
  const tableB = [
    '/api/v1/commercial/checkout/status',
    '/api/v1/commercial/checkout/prepare',
    '/api/v1/commercial/checkout/verify',
    '/api/v1/payment-gate/random/status',
    '/api/v1/payment-gate/random/prepare',
    '/api/v1/payment-gate/random/verify',
    '/api/v1/readiness',
    '/api/v1/local-ai/runtime-proof',
    '/api/v1/privacy-execution-matrix',
    '/api/v1/privacy-execution-claims',
    '/api/v1/provider-integrations/status',
    '/api/v1/rpc/stream/stats',
    '/api/v1/private-payments/onchain-proof',
    '/api/v1/private-payments/health',
    '/api/v1/private-payments/challenge',
    '/api/v1/private-payments/balances/{wallet}',
  ];

  it('gives every table B path the API server, and table C paths none of their own', () => {
    for (const path of tableB) {
      expect(platform.paths[path], path).toBeDefined();
      expect(platform.paths[path]!.servers, path).toEqual([
        { url: URLS.api, description: expect.any(String) },
      ]);
    }
    const commercial = new Set(
      buildTables()
        .commercial.list()
        .map((r) => r.path),
    );
    for (const [path, item] of Object.entries(platform.paths)) {
      if (commercial.has(path))
        expect(
          item.servers?.map((s) => s.url),
          path,
        ).toEqual([URLS.api]);
      else expect(item.servers, path).toBeUndefined();
    }
    for (const path of Object.keys(exchange.paths)) expect(exchange.paths[path]!.servers).toBeUndefined();
  });

  it('declares the balance query’s Bearer token', () => {
    const op = platform.paths['/api/v1/private-payments/balances/{wallet}']!.get!;
    expect(op.security).toEqual([{ paymentsProviderToken: [] }]);
    expect(platform.components.securitySchemes.paymentsProviderToken).toMatchObject({
      type: 'http',
      scheme: 'bearer',
    });
  });

  it('links table B replies to API_URL too', async () => {
    const res = await app.request
      .get('/api/v1/private-payments/challenge?wallet=EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v')
      .expect(503);
    expect(res.body.code).toBe('payments_provider_unconfigured');
  });
});

describe('declared security is what each route does', () => {
  let credentials: Record<string, Record<string, string>>;

  beforeAll(async () => {
    const agent = await registerAgent(app);
    const license = await grantLicense(app.deps.db, 'Enterprise');
    credentials = {
      operatorToken: OPERATOR,
      agentKey: agent.auth,
      licenseKey: license.auth,
      // An organization's admin key acts as its license on every route a license may use.
      organizationKey: {
        Authorization: `Bearer ${
          (
            await app.request
              .post('/api/v1/organization/keys')
              .set(license.auth)
              .send({ name: 'documents', scopes: ['admin'] })
              .expect(201)
          ).body.apiKey
        }`,
      },
      // A job's access token opens one job; shaped as one, it gets past authentication everywhere
      // a job's token is listed (the job itself then answers 404 to any other).
      jobToken: { Authorization: `Bearer jt_${'A'.repeat(43)}` },
      // The provider's token is passed on unread; any Bearer value gets past the service.
      paymentsProviderToken: { Authorization: 'Bearer provider-access-token' },
    };
  });

  /** Sends the operation with no body (nothing it can act on) and checks a problem reply is documented. */
  async function send(doc: Document, path: string, method: string, op: Operation, headers = {}) {
    const url = path.replace(/\{\w+\}/g, 'x');
    const res: supertest.Response = await (
      app.request as unknown as Record<string, (u: string) => supertest.Test>
    )[method]!(url).set(headers);
    if (res.status >= 400 && res.status < 500) {
      expect(res.headers['content-type'], `${op.operationId} ${res.status}`).toMatch(
        /^application\/problem\+json/,
      );
      const documented = op.responses[String(res.status)]?.content?.['application/problem+json']?.schema;
      expect(documented, `${op.operationId} does not document ${res.status}`).toBeDefined();
      const codes = documented!.allOf?.[1]?.properties?.code?.enum;
      expect(codes, `${op.operationId} ${res.status}`).toContain(res.body.code);
    }
    void doc;
    return res;
  }

  it('lists, for every route, the credentials its auth mode takes', () => {
    // What `authenticate` (api/http/auth.ts) accepts for each mode, read from the code, not the generator.
    const expected: Record<string, Security> = {
      public: [],
      'operator-optional': [{}, { operatorToken: [] }],
      operator: [{ operatorToken: [] }],
      agent: [{ agentKey: [] }],
      'agent-optional': [{}, { agentKey: [] }, { licenseKey: [] }, { organizationKey: [] }],
      job: [
        {},
        { jobToken: [] },
        { agentKey: [] },
        { licenseKey: [] },
        { organizationKey: [] },
        { operatorToken: [] },
      ],
      'operator-or-license': [{ operatorToken: [] }, { licenseKey: [] }, { organizationKey: [] }],
      'provider-token': [{ paymentsProviderToken: [] }],
    };
    const tables = buildTables();
    const routes = [...tables.exchange.list(), ...tables.commercial.list(), ...tables.site.list()].filter(
      (r) => !r.hidden,
    );
    const documented = new Map(
      [...operations(exchange), ...operations(platform)].map((o) => [o.op.operationId, o.op.security]),
    );
    expect(documented.size).toBe(routes.length);
    // A capability (Bearer cs_…, gs_…) opens one resource on its route: one more credential listed,
    // optional where the mode is public (the route answers without it: 404, or its public part).
    const capability: Record<string, Security> = {
      checkout: [{ checkoutSecret: [] }],
      gate: [{ gateSecret: [] }],
    };
    for (const r of routes) {
      // An organization key's requirement names the scope the route needs (GET: read; a write: its line,
      // or admin outside every line; or the route's own).
      const scope = r.scope ?? (r.method === 'get' ? 'read' : (r.product ?? 'admin'));
      const mode = expected[r.auth ?? 'public']!.map((req) =>
        'organizationKey' in req ? { organizationKey: [scope] } : req,
      );
      const listed = r.capability
        ? [...(mode.length === 0 ? [{}] : mode), ...capability[r.capability]!]
        : mode;
      expect(documented.get(r.operationId), r.operationId).toEqual(listed);
    }
    expect(routes.filter((r) => r.capability).map((r) => r.operationId)).toEqual([
      'checkoutStatus',
      'verifyCheckout',
      'paymentGateStatus',
      'paymentGateVerify',
    ]);
  });

  it('answers without a credential exactly where the document lists none, and 401 elsewhere', async () => {
    const seen: string[] = [];
    for (const doc of [exchange, platform]) {
      for (const { path, method, op } of operations(doc)) {
        const security = op.security!;
        const open = security.length === 0 || security.some((r) => Object.keys(r).length === 0);
        const res = await send(doc, path, method, op);
        if (open) expect(res.status, `${op.operationId} without a credential`).not.toBe(401);
        else {
          expect(res.status, `${op.operationId} without a credential`).toBe(401);
          expect(res.body.code).toBe('unauthorized');
        }
        seen.push(op.operationId);
      }
    }
    expect(seen.length).toBeGreaterThan(80);
  });

  it('takes each credential it lists, and refuses the others where one is required', async () => {
    let takes = 0;
    let refuses = 0;
    for (const doc of [exchange, platform]) {
      for (const { path, method, op } of operations(doc)) {
        const listed = new Set(op.security!.flatMap((r) => Object.keys(r)));
        const optional = op.security!.length === 0 || op.security!.some((r) => Object.keys(r).length === 0);
        for (const [scheme, header] of Object.entries(credentials)) {
          const res = await send(doc, path, method, op, header);
          if (listed.has(scheme)) {
            expect(res.status, `${op.operationId} with ${scheme}`).not.toBe(401);
            takes++;
          } else if (!optional && !listed.has('paymentsProviderToken')) {
            expect(res.status, `${op.operationId} with ${scheme}`).toBe(401);
            refuses++;
          }
        }
      }
    }
    expect(takes).toBeGreaterThan(30);
    expect(refuses).toBeGreaterThan(30);
  });

  it('shows the operator more on treasuryStatus, and nothing more to anyone else', async () => {
    const op = exchange.paths['/api/treasury/status']!.get!;
    expect(op.security).toEqual([{}, { operatorToken: [] }]);
    expect((await app.request.get('/api/treasury/status').expect(200)).body.details).toBe(false);
    expect(
      (await app.request.get('/api/treasury/status').set(credentials.agentKey!).expect(200)).body.details,
    ).toBe(false);
    expect((await app.request.get('/api/treasury/status').set(OPERATOR).expect(200)).body.details).toBe(true);
  });
});

describe('problem replies carry documented codes', () => {
  const codesOf = (doc: Document, path: string, method: string, status: number) =>
    doc.paths[path]![method]!.responses[String(status)]?.content?.['application/problem+json']?.schema
      .allOf?.[1]?.properties?.code?.enum ?? [];

  it('documents the codes the pipeline and the handlers really send', async () => {
    const cases: Array<[Document, string, string, () => supertest.Test]> = [
      [exchange, '/api/jobs', 'post', () => app.request.post('/api/jobs').set('Idempotency-Key', 'short')],
      [
        exchange,
        '/api/jobs',
        'post',
        () => app.request.post('/api/jobs').set('Content-Type', 'text/plain').send('hello'),
      ],
      [
        exchange,
        '/api/jobs',
        'post',
        () => app.request.post('/api/jobs').send({ service: 'nope', input: {} }),
      ],
      [
        exchange,
        '/api/jobs',
        'post',
        () =>
          app.request
            .post('/api/jobs?ref=NO-SUCH-CODE')
            .send({ service: 'attest.timestamp', input: { digest: '0'.repeat(64) } }),
      ],
      [exchange, '/api/registry/search', 'get', () => app.request.get('/api/registry/search?cursor=zzz')],
      [exchange, '/api/jobs/{jobId}', 'get', () => app.request.get('/api/jobs/%E0')],
      [
        exchange,
        '/api/receipts/{receiptId}',
        'get',
        () => app.request.get('/api/receipts/rcpt_01m7ycenb0y37det98dds34qjx'),
      ],
      [
        exchange,
        '/api/revenue',
        'get',
        () => app.request.get('/api/revenue').set('Authorization', 'Basic eDp5'),
      ],
      [
        platform,
        '/api/v1/private-payments/balances/{wallet}',
        'get',
        () =>
          app.request.get('/api/v1/private-payments/balances/EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v'),
      ],
      [
        platform,
        '/api/proof-workflows/log/consistency',
        'get',
        () => app.request.get('/api/proof-workflows/log/consistency?from=2&to=1'),
      ],
    ];
    const met = new Set<string>();
    for (const [doc, path, method, send] of cases) {
      const res = await send();
      expect(res.status, JSON.stringify(res.body)).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(codesOf(doc, path, method, res.status), `${method} ${path} ${res.status}`).toContain(
        res.body.code,
      );
      met.add(res.body.code);
    }
    expect([...met].sort()).toEqual(
      [
        'bad_request',
        'invalid_cursor',
        'invalid_idempotency_key',
        'invalid_range',
        'not_found',
        'unauthorized',
        'unknown_referral',
        'unknown_service',
        'unsupported_media_type',
      ].sort(),
    );
  });

  it('documents the proof log’s tree sizes as the routes take them: `from` required, `to` and `treeSize` optional', async () => {
    type Param = { name: string; required?: boolean; schema: { type?: unknown } };
    const params = (path: string) =>
      (platform.paths[path]!.get as unknown as { parameters: Param[] }).parameters;
    const consistency = params('/api/proof-workflows/log/consistency');
    expect(consistency.map((p) => [p.name, p.required])).toEqual([
      ['from', true],
      ['to', false],
    ]);
    const inclusion = params('/api/proof-workflows/log/inclusion');
    expect(inclusion.find((p) => p.name === 'treeSize')!.required).toBe(false);
    // A size is never null, in the document as in the route.
    for (const p of [...consistency, ...inclusion]) expect(JSON.stringify(p.schema)).not.toContain('null');

    // The route as documented: without `from`, or with an empty or non-numeric one, a 400 naming it.
    for (const query of ['', '?to=0', '?from=', '?from=1e0', '?from=-1', '?from=null']) {
      const res = await app.request.get(`/api/proof-workflows/log/consistency${query}`).expect(400);
      expect(res.body.code, query).toBe('validation_failed');
      expect(JSON.stringify(res.body.errors), query).toContain('from');
    }
    // With it (and `to` left out: the latest size), a proof.
    const ok = await app.request.get('/api/proof-workflows/log/consistency?from=0').expect(200);
    expect(ok.body.proof).toBeDefined();
  });

  it('documents createJob’s 402 with the job and its PAYMENT-REQUIRED and Location headers, and PAYMENT-RESPONSE on the 202', () => {
    const op = exchange.paths['/api/jobs']!.post! as unknown as {
      responses: Record<string, { headers?: Record<string, { required?: boolean }>; content?: object }>;
    };
    const paymentRequired = op.responses['402']!;
    expect(Object.keys(paymentRequired.headers ?? {}).sort()).toEqual(['Location', 'PAYMENT-REQUIRED']);
    // Present whenever x402 can pay a quote; absent, never empty, when nothing can.
    expect(paymentRequired.headers!['PAYMENT-REQUIRED']!.required).toBe(false);
    // The created job, as in the 202; and, for a refused x402 payment, a problem document.
    const content = paymentRequired.content as Record<string, unknown>;
    expect(content['application/json']).toEqual(
      (op.responses['202']!.content as Record<string, unknown>)['application/json'],
    );
    expect(Object.keys(content).sort()).toEqual(['application/json', 'application/problem+json']);
    expect(Object.keys(op.responses['202']!.headers ?? {}).sort()).toEqual(['Location', 'PAYMENT-RESPONSE']);
  });
});

describe('the start banner', () => {
  const tables = buildTables();
  /** The base a path is served under: its route table's, the pages' (site), or the docs' (base). */
  function baseOf(path: string, urls: { base: string; api: string; site: string }): string {
    const served = (['exchange', 'commercial', 'site'] as const).find((t) =>
      tables[t].list().some((r) => r.path === path),
    );
    if (served === 'exchange' || path === '/docs') return urls.base;
    if (served === 'commercial') return urls.api;
    return urls.site;
  }

  it.each([
    ['each base its own', URLS, { baseUrl: URLS.base, apiUrl: URLS.api, siteUrl: URLS.site }],
    [
      'only BASE_URL: tables B and C at it, as the app links them',
      { base: URLS.base, api: URLS.base, site: URLS.base },
      { baseUrl: URLS.base },
    ],
  ])('prints each address under the base of the table that serves it (%s)', (_name, urls, given) => {
    const lines = banner({ port: 3000, ...given });
    const addresses = lines
      .map((l) => l.trim().split(/\s{2,}/)[1])
      .filter((a): a is string => !!a && a.startsWith('https://'));
    expect(addresses.length).toBeGreaterThanOrEqual(6);
    for (const address of addresses) {
      const { origin, pathname } = new URL(address);
      expect(origin, address).toBe(baseOf(pathname, urls));
    }
    expect(addresses).toContain(`${urls.api}/api/v1/readiness`);
  });
});
