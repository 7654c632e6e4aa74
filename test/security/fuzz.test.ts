// A route fuzz over both OpenAPI documents, in the manner of schemathesis: for every operation, requests
// generated from its own schemas (fast-check, fixed seed) and mutated into wrong types, missing and
// unknown fields, huge strings, NUL bytes, odd unicode, deep JSON and bad ids; anonymous, with an agent
// key and with the operator token. No answer may be a 5xx, and every 4xx is a problem document.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandInProvider } from '../../dev/stack/payments-standin';
import type { TestApp } from '../helpers';

// Every asset family priceable and the payments provider present, so a 503 can only mean a fault.
const providerSecret = 'fuzz-provider-secret-0123456789abcdefghij';
const provider = await startStandInProvider({ redeemUrl: 'http://127.0.0.1:9/redeem', providerSecret });
Object.assign(process.env, {
  PAYMENTS_PROVIDER_SECRET: providerSecret,
  TREASURY_SOLANA: 'So11111111111111111111111111111111111111112',
  TREASURY_EVM: '0x000000000000000000000000000000000000dEaD',
  RATES_USD: 'SOL=150,ETH=3000,BTC=90000,XMR=150',
  PAYMENTS_PROVIDER_URL: provider.url,
});
const { newWallet, registerAgent } = await import('../exchange/fixtures');
const { testApp } = await import('../helpers');

type Schema = Record<string, unknown>;
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema: Schema;
}
interface Operation {
  operationId: string;
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}

const SEED = 20261122;
const VALID_SAMPLES = 2;

// Values for fields whose rule the schema cannot show (a refinement), so generated requests get past
// validation and reach the services and Postgres behind it.
const wallet = newWallet();
const hints: Record<string, fc.Arbitrary<unknown>> = {
  walletPublicKey: fc.constant(wallet.publicKey),
  wallet: fc.constant(wallet.publicKey),
  mint: fc.constant('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v'),
  signature: fc.constant(wallet.sign('fuzz')),
  service: fc.constantFrom('attest.timestamp', 'attest.batch'),
};

/** A fast-check arbitrary for the JSON Schema subset the documents use. */
function arbitrary(schema: Schema, doc: Doc, depth = 0, name?: string): fc.Arbitrary<unknown> {
  if (name && hints[name]) return hints[name]!;
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.split('/').pop()!;
    return arbitrary(doc.components!.schemas![name]!, doc, depth);
  }
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  if ('const' in schema) return fc.constant(schema.const);
  const variants = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (variants) return fc.oneof(...variants.map((v) => arbitrary(v, doc, depth)));
  const type = Array.isArray(schema.type)
    ? (schema.type as string[])[0]
    : (schema.type as string | undefined);
  switch (type) {
    case 'string': {
      if (typeof schema.pattern === 'string') {
        try {
          return fc.stringMatching(new RegExp(schema.pattern as string));
        } catch {
          /* fall through to a plain string */
        }
      }
      if (schema.format === 'email') return fc.emailAddress();
      if (schema.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
      if (schema.format === 'uri') return fc.webUrl();
      const minLength = Number(schema.minLength ?? 0);
      return fc.string({
        minLength,
        maxLength: Math.max(minLength, Math.min(Number(schema.maxLength ?? 24), 24)),
      });
    }
    case 'integer':
    case 'number': {
      const min = Number(
        schema.minimum ??
          (schema.exclusiveMinimum !== undefined ? Number(schema.exclusiveMinimum) + 1 : -1000),
      );
      const max = Number(schema.maximum ?? Math.max(min + 1000, 1000));
      return fc.integer({ min: Math.ceil(min), max: Math.floor(Math.max(min, Math.min(max, 2 ** 31 - 1))) });
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const minLength = Number(schema.minItems ?? 0);
      const items = (schema.items as Schema | undefined) ?? {};
      return fc.array(depth > 4 ? fc.constant(null) : arbitrary(items, doc, depth + 1), {
        minLength,
        maxLength: Math.max(minLength, Math.min(Number(schema.maxItems ?? 3), 3)),
      });
    }
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      const required = (schema.required ?? []) as string[];
      if (Object.keys(properties).length === 0)
        return fc.dictionary(fc.string({ maxLength: 8 }), fc.string(), { maxKeys: 2 });
      return fc.record(
        Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, arbitrary(v, doc, depth + 1, k)])),
        { requiredKeys: required.filter((k) => k in properties) },
      );
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** Values that break a string slot in every way the guard and the validators must survive. */
const hostileStrings = [
  '',
  'x'.repeat(10_000),
  'nul\u0000byte',
  'esc\u001b[31m',
  '🔥\u202eevil\u200b',
  '\ud800',
  "' or 1=1 --",
  '../../etc/passwd',
  '%00',
  '{"$gt":""}',
];
const wrongValues: unknown[] = [12345, -1, 1e308, true, null, [], {}, ['x'], { a: { b: 1 } }];
const deepJson = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

interface Probe {
  method: string;
  path: string;
  query?: Record<string, string>;
  body?: unknown;
  raw?: { type: string; text: string };
}

function concretePath(template: string, params: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? 'x'));
}

/** Valid samples and mutations of one operation. */
function probes(method: string, template: string, op: Operation, doc: Doc, seed: number): Probe[] {
  const params = (op.parameters ?? []).filter((p) => p.in === 'path' || p.in === 'query');
  const bodySchema = op.requestBody?.content['application/json']?.schema;
  const sample = <T>(arb: fc.Arbitrary<T>): T[] => fc.sample(arb, { numRuns: VALID_SAMPLES, seed });
  const valuesOf = (p: Parameter) =>
    p.name === 'wait' ? ['0', '0'] : sample(arbitrary(p.schema, doc, 0, p.name)).map((v) => String(v));
  const validParams = params.map((p) => [p, valuesOf(p)] as const);
  const pick = (i: number, inWhere: 'path' | 'query') =>
    Object.fromEntries(
      validParams
        .filter(([p]) => p.in === inWhere && (p.required || i % 2 === 0))
        .map(([p, vs]) => [p.name, vs[i % vs.length]!]),
    );
  const bodies = bodySchema ? sample(arbitrary(bodySchema, doc)) : [undefined];
  const out: Probe[] = [];
  for (let i = 0; i < VALID_SAMPLES; i++) {
    out.push({
      method,
      path: concretePath(template, pick(i, 'path')),
      query: pick(i, 'query'),
      body: bodies[i],
    });
  }
  // Mutations start from the required parameters only, so one bad value is all that is wrong.
  const required = (inWhere: 'path' | 'query') =>
    Object.fromEntries(
      validParams.filter(([p]) => p.in === inWhere && p.required).map(([p, vs]) => [p.name, vs[0]!]),
    );
  const base = { method, path: concretePath(template, required('path')), query: required('query') };
  const firstBody = (bodies[0] ?? {}) as Record<string, unknown>;

  // Bad ids and hostile values in every path and query parameter.
  for (const [p] of validParams) {
    for (const [k, bad] of [
      hostileStrings[2]!,
      hostileStrings[1]!.slice(0, 500),
      hostileStrings[4]!,
      '..%2f',
    ].entries()) {
      if (p.in === 'path')
        out.push({ ...base, path: concretePath(template, { ...pick(0, 'path'), [p.name]: bad }) });
      else if (k < 2) out.push({ ...base, query: { ...base.query, [p.name]: bad } });
    }
  }
  if (method !== 'get') {
    if (bodySchema) {
      out.push({ ...base, body: {} }); // missing fields
      out.push({ ...base, body: { ...firstBody, unexpected: 1 } }); // unknown field
      out.push({ ...base, body: [firstBody] }); // an array where an object belongs
      out.push({
        ...base,
        body: JSON.parse(
          JSON.stringify(firstBody, (_k, v) => (typeof v === 'string' ? hostileStrings[2] : v)),
        ) as unknown,
      });
      for (const key of Object.keys(firstBody).slice(0, 6)) {
        out.push({ ...base, body: { ...firstBody, [key]: wrongValues[key.length % wrongValues.length] } });
        out.push({
          ...base,
          body: { ...firstBody, [key]: hostileStrings[(key.length + 1) % hostileStrings.length] },
        });
      }
    }
    out.push({ ...base, raw: { type: 'application/json', text: `{"a":${deepJson(5_000)}}` } });
    out.push({ ...base, raw: { type: 'application/json', text: '{"truncated":' } });
    out.push({ ...base, raw: { type: 'text/plain', text: 'not json' } });
  } else {
    out.push({ ...base, query: { ...base.query, unexpected: '1' } });
  }
  return out;
}

let app: TestApp;
let agentAuth: string;
const OPERATOR = 'Bearer op_test_token_0123456789';
const docs: Record<string, Doc> = {};

beforeAll(async () => {
  app = testApp();
  app.deps.rateLimit = { ...app.deps.rateLimit, enabled: false };
  agentAuth = (await registerAgent(app, { name: 'Fuzzer' })).auth.Authorization;
  for (const url of ['/openapi.json', '/openapi/platform.json'])
    docs[url] = (await app.request.get(url).expect(200)).body as Doc;
});
afterAll(async () => {
  await app.close();
  await provider.close();
});

describe('route fuzz', () => {
  it('answers every generated request to every operation with no 5xx and 4xx as problem+json', async () => {
    const started = Date.now();
    const failures: string[] = [];
    let sent = 0;
    let operations = 0;
    for (const doc of Object.values(docs)) {
      for (const [template, ops] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(ops)) {
          // A path item also holds non-operations (the commercial table's own `servers`).
          if (!['get', 'post', 'put', 'delete'].includes(method)) continue;
          operations++;
          const list = probes(method, template, op, doc, SEED + operations);
          for (const [i, p] of list.entries()) {
            const auth = [undefined, agentAuth, OPERATOR][(i + operations) % 3];
            let req = app.request[method as 'get' | 'post' | 'put' | 'delete'](p.path).query(p.query ?? {});
            if (auth) req = req.set('Authorization', auth);
            if (p.raw) req = req.set('Content-Type', p.raw.type).send(p.raw.text);
            else if (p.body !== undefined) req = req.send(p.body as object);
            const res = await req;
            sent++;
            const problem = /^application\/problem\+json/.test(res.headers['content-type'] ?? '');
            // A 4xx the operation documents with a body of its own (createJob's 402) is no problem reply.
            const documented = !!(op as { responses?: Record<string, unknown> }).responses?.[
              String(res.status)
            ];
            if (res.status >= 500 || (res.status >= 400 && !problem && !documented)) {
              failures.push(
                `${op.operationId}: ${method.toUpperCase()} ${p.path.slice(0, 120)} → ${res.status} ${res.text.slice(0, 160)} (body ${JSON.stringify(p.body ?? p.raw?.text ?? null).slice(0, 160)})`,
              );
            }
          }
        }
      }
    }
    expect(operations).toBeGreaterThanOrEqual(80);
    expect(sent).toBeGreaterThan(operations * 8);
    expect(failures, failures.slice(0, 15).join('\n')).toEqual([]);
    expect(Date.now() - started).toBeLessThan(60_000);
  }, 90_000);
});
