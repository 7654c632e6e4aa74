// registerAgent and searchAgents over HTTP: keys shown once and stored hashed, the platform's auth
// accepting them, full-text search, filters, and keyset pagination that neither repeats nor skips.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../shared/platform/crypto';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { allPages, expectProblem, newWallet, registerAgent } from './fixtures';

let app: TestApp;
beforeAll(() => {
  app = testApp();
});
afterAll(() => app.close());

describe('registerAgent', () => {
  it('registers an agent and returns its API key once, storing only the hash', async () => {
    const wallet = newWallet();
    const res = await app.request
      .post('/api/registry/register')
      .send({
        name: 'Ledger Scribe',
        description: 'Timestamps ledgers and hands results on',
        capabilities: ['Attest.Timestamp', 'attest.timestamp', 'ledger'],
        tags: ['finance'],
        endpointUrl: 'https://scribe.example/hooks',
        walletPublicKey: wallet.publicKey,
      })
      .expect(201);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body.agent).toMatchObject({
      name: 'Ledger Scribe',
      capabilities: ['attest.timestamp', 'ledger'],
      tags: ['finance'],
      endpointUrl: 'https://scribe.example/hooks',
      walletPublicKey: wallet.publicKey,
    });
    expect(res.body.agent.id).toMatch(/^agt_[0-9a-z]{26}$/);
    const apiKey = res.body.apiKey as string;
    expect(apiKey).toMatch(/^ak_[A-Za-z0-9_-]{43}$/);

    const keys = await app.deps.db('api_keys').where({ agent_id: res.body.agent.id });
    expect(keys).toHaveLength(1);
    expect(keys[0].key_hash).toBe(sha256Hex(apiKey));
    const dump = JSON.stringify([keys, await app.deps.db('agents').where({ id: res.body.agent.id })]);
    expect(dump).not.toContain(apiKey);
    expect(dump).not.toContain(apiKey.slice(3));

    // The platform's auth accepts the key (a route that needs an agent key).
    await app.request.post('/api/referrals').set('Authorization', `Bearer ${apiKey}`).send({}).expect(201);
  });

  it('refuses bad input with a problem and writes nothing', async () => {
    const before = (await app.deps.db('agents').count({ n: '*' }))[0]!.n;
    const wallet = newWallet().publicKey;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ name: 'x', walletPublicKey: 'not-base58-0OIl' }, 'body.walletPublicKey'],
      [{ name: 'x', walletPublicKey: '1111111111111111111111111111111' }, 'body.walletPublicKey'], // 31 zero bytes? not 32
      [{ walletPublicKey: wallet }, 'body.name'],
      [{ name: 'x', walletPublicKey: wallet, extra: true }, 'body'],
      [{ name: 'x', walletPublicKey: wallet, endpointUrl: 'ftp://x.example' }, 'body.endpointUrl'],
      [{ name: 'x', walletPublicKey: wallet, capabilities: ['has space'] }, 'body.capabilities.0'],
    ];
    for (const [body, path] of cases) {
      const res = await app.request.post('/api/registry/register').send(body);
      expectProblem(res, 400, 'validation_failed');
      expect((res.body.errors as Array<{ path: string }>).map((e) => e.path).join(' ')).toContain(path);
    }
    expect((await app.deps.db('agents').count({ n: '*' }))[0]!.n).toBe(before);
  });

  it('answers 401 for a missing, malformed, unknown or revoked key', async () => {
    const agent = await registerAgent(app);
    expectProblem(await app.request.post('/api/referrals').send({}), 401, 'unauthorized');
    for (const token of ['ak_short', `ak_${'A'.repeat(43)}`, 'lk_whatever', 'op_test_token_0123456789']) {
      expectProblem(
        await app.request.post('/api/referrals').set('Authorization', `Bearer ${token}`).send({}),
        401,
        'unauthorized',
      );
    }
    await app.deps.db('api_keys').where({ agent_id: agent.id }).update({ revoked_at: new Date() });
    expectProblem(await app.request.post('/api/referrals').set(agent.auth).send({}), 401, 'unauthorized');
  });
});

describe('searchAgents', () => {
  let ids: { solver: string; notary: string; courier: string };
  beforeAll(async () => {
    ids = {
      solver: (
        await registerAgent(app, {
          name: 'Groth Solver',
          description: 'Generates zero-knowledge proofs for policy checks',
          capabilities: ['zk.prove', 'policy'],
          tags: ['zk', 'search-fixture'],
        })
      ).id,
      notary: (
        await registerAgent(app, {
          name: 'Notary Nine',
          description: 'Timestamps documents and signs attestations',
          capabilities: ['attest.timestamp'],
          tags: ['legal', 'search-fixture'],
        })
      ).id,
      courier: (
        await registerAgent(app, {
          name: 'Courier',
          description: 'Delivers proofs and documents between agents',
          capabilities: ['delivery'],
          tags: ['logistics', 'search-fixture'],
        })
      ).id,
    };
  });

  it('finds agents by full text (stemmed), ranked, with capability and tag filters', async () => {
    const proofs = await app.request.get('/api/registry/search?q=proof').expect(200);
    const found = (proofs.body.agents as Array<{ id: string }>).map((a) => a.id);
    // "proofs" in both descriptions stems to "proof"; the name match is not needed.
    expect(found).toEqual(expect.arrayContaining([ids.solver, ids.courier]));
    expect(found).not.toContain(ids.notary);

    const phrase = await app.request.get(
      `/api/registry/search?q=${encodeURIComponent('"signs attestations"')}`,
    );
    expect(phrase.body.agents.map((a: { id: string }) => a.id)).toEqual([ids.notary]);
    const excluded = await app.request.get(`/api/registry/search?q=${encodeURIComponent('proofs -policy')}`);
    expect(excluded.body.agents.map((a: { id: string }) => a.id)).toEqual([ids.courier]);

    const byName = await app.request.get('/api/registry/search?q=groth').expect(200);
    expect(byName.body.agents[0].id).toBe(ids.solver);

    const cap = await app.request.get('/api/registry/search?capability=attest.timestamp').expect(200);
    expect(cap.body.agents.map((a: { id: string }) => a.id)).toContain(ids.notary);
    expect(cap.body.agents.map((a: { id: string }) => a.id)).not.toContain(ids.solver);

    const tag = await app.request.get('/api/registry/search?tag=LEGAL').expect(200);
    expect(tag.body.agents.map((a: { id: string }) => a.id)).toEqual([ids.notary]);

    const both = await app.request.get('/api/registry/search?q=documents&tag=logistics').expect(200);
    expect(both.body.agents.map((a: { id: string }) => a.id)).toEqual([ids.courier]);
  });

  it('uses the GIN full-text index rather than scanning', async () => {
    const rows = await app.deps.db.transaction(async (trx) => {
      await trx.raw('set local enable_seqscan = off');
      const plan = await trx.raw(
        `explain select id from agents where search_vector @@ websearch_to_tsquery('english', 'proof')`,
      );
      return plan.rows as Array<Record<string, string>>;
    });
    const text = rows.map((r) => Object.values(r)[0]).join('\n');
    expect(text).toContain('agents_search_idx');
  });

  it('pages with cursors: stable order, no duplicates, no omissions, also while rows are added', async () => {
    for (let i = 0; i < 11; i++) {
      await registerAgent(app, {
        name: `Pager ${i}`,
        description: i % 2 ? 'pagination witness odd' : 'pagination witness even witness',
        tags: ['pager'],
      });
    }
    const expected = (
      await app.request.get('/api/registry/search?tag=pager&limit=100').expect(200)
    ).body.agents.map((a: { id: string }) => a.id);
    expect(expected).toHaveLength(11);
    const pages = await allPages(app, '/api/registry/search?tag=pager', 'agents', 3);
    expect(pages.map((p) => p.length)).toEqual([3, 3, 3, 2]);
    expect(pages.flat()).toEqual(expected);

    // Ranked text search pages the same way (ties broken by id).
    const ranked = (
      await app.request.get('/api/registry/search?q=witness&limit=100').expect(200)
    ).body.agents.map((a: { id: string }) => a.id);
    expect(ranked).toHaveLength(11);
    const rankedPages = await allPages(app, '/api/registry/search?q=witness', 'agents', 4);
    expect(rankedPages.flat()).toEqual(ranked);

    // A new agent registered mid-way does not shift the pages after the cursor.
    const first = await app.request.get('/api/registry/search?tag=pager&limit=5').expect(200);
    await registerAgent(app, { name: 'Late pager', tags: ['pager'] });
    const rest = await allPages(app, '/api/registry/search?tag=pager', 'agents', 5, first.body.nextCursor);
    expect([...first.body.agents.map((a: { id: string }) => a.id), ...rest.flat()]).toEqual(expected);
  });

  it('refuses bad cursors, cursors of another search and oversized pages', async () => {
    const page = await app.request.get('/api/registry/search?tag=search-fixture&limit=1').expect(200);
    expect(page.body.nextCursor).toBeTruthy();
    expectProblem(await app.request.get('/api/registry/search?cursor=garbage'), 400, 'invalid_cursor');
    expectProblem(
      await app.request.get(`/api/registry/search?tag=zk&cursor=${encodeURIComponent(page.body.nextCursor)}`),
      400,
      'invalid_cursor',
    );
    expectProblem(await app.request.get('/api/registry/search?limit=101'), 400, 'validation_failed');
    expectProblem(await app.request.get('/api/registry/search?limit=0'), 400, 'validation_failed');
    expectProblem(await app.request.get('/api/registry/search?sort=name'), 400, 'validation_failed');
  });
});
