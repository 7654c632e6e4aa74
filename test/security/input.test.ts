// One input guard before every route: NUL and other control characters in any string of the body,
// the query or the path are 400 validation_failed, and so are the characters that make a name lie (a
// CR that overwrites an operator's row, C1 controls, bidi overrides, line separators, invisible format
// characters); a one-line string holds no tab, CR or LF, and only text (descriptions, signed
// challenges) keeps line feeds. JSON nested past 64 levels is 400 json_too_deep — before idempotency,
// before Postgres. Nothing is written, and nothing reaches Postgres to refuse.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardInput, MAX_JSON_DEPTH } from '../../api/http/input-guard';
import { captureLogs, trialProof } from '../licensing/helpers';
import { expectProblem, newWallet, registerAgent } from '../exchange/fixtures';
import type { TestAgent } from '../exchange/fixtures';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';

let app: TestApp;
let seller: TestAgent;
let logs: Awaited<ReturnType<typeof captureLogs>>;
beforeAll(async () => {
  logs = await captureLogs();
  app = testApp();
  seller = await registerAgent(app, { name: 'Seller' });
});
afterAll(async () => {
  logs.stop();
  await app.close();
});

const tables = [
  'agents',
  'listings',
  'checkouts',
  'licenses',
  'trial_claims',
  'jobs',
  'job_events',
  'idempotency_keys',
  'proofs',
];
async function counts() {
  return Object.fromEntries(
    await Promise.all(
      tables.map(async (t) => [t, Number((await app.deps.db(t).count({ n: '*' }))[0]!.n)] as const),
    ),
  );
}

const nested = (depth: number) => {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { a: v };
  return v;
};

describe('the input guard', () => {
  it('refuses NUL and control characters everywhere with 400 validation_failed, writing nothing', async () => {
    const before = await counts();
    const attempts = [
      () =>
        app.request
          .post('/api/registry/register')
          .send({ name: 'bad\u0000name', walletPublicKey: newWallet().publicKey }),
      () =>
        app.request
          .post('/api/registry/register')
          .send({ name: 'bell', description: 'ring \u0007', walletPublicKey: newWallet().publicKey }),
      () => app.request.get('/api/registry/search?q=%00'),
      () => app.request.get('/api/marketplace/listings?q=abc%00def'),
      () => app.request.get('/api/jobs/job_%00'),
      () =>
        app.request
          .post('/api/v1/commercial/checkout/prepare')
          .send({ license: 'Starter', asset: 'ETH', organization: 'Acme\u0000', email: 'a@b.test' }),
      () =>
        app.request
          .post('/api/marketplace/listings')
          .set(seller.auth)
          .send({ title: 'A title\u0000', description: 'x', priceUsdCents: 100, asset: 'USDC-SOL' }),
      () =>
        app.request
          .post('/api/jobs')
          .send({ service: 'attest.timestamp', input: { 'dig\u0000est': 'a'.repeat(64) } }),
      () =>
        app.request
          .post('/api/jobs')
          .set('Idempotency-Key', 'nul-in-body-0000001')
          .send({ service: 'attest.timestamp\u001b', input: {} }),
    ];
    for (const attempt of attempts) {
      const res = await attempt();
      expectProblem(res, 400, 'validation_failed');
    }
    expect(await counts()).toEqual(before);
    // Postgres never saw a string it would refuse (it logs those as errors with the SQL).
    expect(logs.lines.join('\n')).not.toMatch(
      /invalid byte sequence|unsupported Unicode escape|internal_error/,
    );
  });

  // Each is what an attacker put in an organization's name: the operator's terminal or a browser would
  // show another name than the one stored (a CR rewrites the row, CSI starts a terminal command, RLO
  // reverses what follows, U+2028 breaks the line, the rest are invisible).
  const lying: Record<string, string> = {
    CR: '\r',
    LF: '\n',
    tab: '\t',
    NUL: '\u0000',
    ESC: '\u001b',
    DEL: '\u007f',
    'NEL (C1)': '\u0085',
    'CSI (C1)': '\u009b',
    LRE: '\u202a',
    RLO: '\u202e',
    LRI: '\u2066',
    PDI: '\u2069',
    RLM: '\u200f',
    ALM: '\u061c',
    'line separator': '\u2028',
    'paragraph separator': '\u2029',
    'zero-width space': '\u200b',
    'word joiner': '\u2060',
    BOM: '\ufeff',
    'soft hyphen': '\u00ad',
    'tag A': '\u{e0041}',
    'Hangul filler': '\u3164',
    'unpaired surrogate': '\ud800',
  };

  it('refuses every lying character in a name, a title and an organization: 400 naming the field, nothing written', async () => {
    const proof = await trialProof(app.request);
    const before = await counts();
    for (const [what, c] of Object.entries(lying)) {
      const name = `Acme${c}Corp`;
      const attempts: Array<
        [
          string,
          () => PromiseLike<{
            status: number;
            headers: Record<string, string>;
            body: Record<string, unknown>;
          }>,
        ]
      > = [
        [
          'body.organization',
          () =>
            app.request
              .post('/api/v1/commercial/checkout/prepare')
              .send({ license: 'TRIAL', organization: name, email: 'a@b.test', ...proof }),
        ],
        [
          'body.name',
          () =>
            app.request.post('/api/registry/register').send({ name, walletPublicKey: newWallet().publicKey }),
        ],
        [
          'body.title',
          () =>
            app.request
              .post('/api/marketplace/listings')
              .set(seller.auth)
              .send({ title: name, description: 'x', priceUsdCents: 100, asset: 'USDC-SOL' }),
        ],
      ];
      for (const [field, attempt] of attempts) {
        const res = await attempt();
        expect(res.status, `${what} in ${field}: ${JSON.stringify(res.body)}`).toBe(400);
        expectProblem(res, 400, 'validation_failed');
        expect((res.body.errors as Array<{ path: string }>)[0]!.path, what).toBe(field);
      }
    }
    // The characters that are never text are refused in a description too; a lone CR as well.
    for (const c of ['\u202e', '\u009b', '\u2028', '\u200b', '\r', '\u0000']) {
      const res = await app.request
        .post('/api/registry/register')
        .send({ name: 'Fine', description: `one${c}two`, walletPublicKey: newWallet().publicKey });
      expectProblem(res, 400, 'validation_failed');
      expect((res.body.errors as Array<{ path: string }>)[0]!.path).toBe('body.description');
    }
    expect(await counts()).toEqual(before);
    // The name without the character is taken: the TRIAL's proof was left unspent by every refusal.
    await app.request
      .post('/api/v1/commercial/checkout/prepare')
      .send({ license: 'TRIAL', organization: `Acme Corp ${Date.now()}`, email: 'a@b.test', ...proof })
      .expect(201);
  });

  it('takes the letters of every script, emoji, ZWJ and ZWNJ in a name', async () => {
    for (const name of [
      'Société Générale',
      'Αθηνά',
      '株式会社テスト',
      'شرکت می‌خواهم',
      '🏳️‍🌈 Pride',
      'हिन्दी',
    ]) {
      const res = await app.request
        .post('/api/registry/register')
        .send({ name, walletPublicKey: newWallet().publicKey });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.agent.name).toBe(name);
    }
  });

  it('lets tab, line feed and CRLF through in text only', async () => {
    const res = await app.request
      .post('/api/registry/register')
      .send({
        name: 'multi line',
        description: 'line one\n\tline two\r\n',
        walletPublicKey: newWallet().publicKey,
      })
      .expect(201);
    expect(res.body.agent.description).toContain('\tline two');
    expectProblem(
      await app.request
        .post('/api/registry/register')
        .send({ name: 'two\nlines', walletPublicKey: newWallet().publicKey }),
      400,
      'validation_failed',
    );
  });

  it('refuses JSON nested 8,000 deep (20,000 where a route takes 64 KiB) with an Idempotency-Key: 400, no row', async () => {
    const before = await counts();
    // As deep as createJob's own body limit (16 KiB) lets it be.
    const deep = `{"service":"attest.timestamp","input":${'['.repeat(8_000)}${']'.repeat(8_000)}}`;
    const res = await app.request
      .post('/api/jobs')
      .set('Idempotency-Key', 'deep-json-000000000001')
      .set('Content-Type', 'application/json')
      .send(deep);
    expectProblem(res, 400, 'json_too_deep');
    const deeper = `{"package":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
    expectProblem(
      await app.request.post('/api/governance/verify').set('Content-Type', 'application/json').send(deeper),
      400,
      'json_too_deep',
    );
    expectProblem(
      await app.request.post('/api/agreements').send(nested(MAX_JSON_DEPTH + 1) as object),
      400,
      'json_too_deep',
    );
    expect(await counts()).toEqual(before);
  });

  it('allows nesting up to the limit and refuses one level more', () => {
    expect(() => guardInput(nested(MAX_JSON_DEPTH), 'body')).not.toThrow();
    expect(() => guardInput(nested(MAX_JSON_DEPTH + 1), 'body')).toThrow(/nest at most 64/);
  });

  it('answers a deep package pasted into the verification page with a page, not a crash', async () => {
    const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
    const res = await app.request.post('/proof-workflows/verify/').type('form').send({ package: deep });
    expect(res.status).toBe(400);
    expect(res.text).toContain('nests too deeply');
  });
});
