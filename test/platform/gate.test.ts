// Routers are walked only by requests under their paths' static prefixes (api/http/gate.ts): a request
// reaches the same route it reached when every router was walked in turn, whatever its case, and a
// request no router serves is the same miss.
import express from 'express';
import supertest from 'supertest';
import { afterAll, describe, expect, it } from 'vitest';
import { gateOutside, gateUnder, staticPrefix } from '../../api/http/gate';
import { buildTables } from '../../api/tables';
import { testApp } from '../helpers';

const app = testApp();
afterAll(() => app.close());

describe('a gate', () => {
  it('takes a path up to its first parameter as its prefix', () => {
    expect(staticPrefix('/api/jobs/{jobId}/events')).toBe('/api/jobs/');
    expect(staticPrefix('/api/services')).toBe('/api/services');
    expect(staticPrefix('/log/tile/*tile')).toBe('/log/tile/');
    expect(staticPrefix('/API/Proof-Workflows/{proofId}')).toBe('/api/proof-workflows/');
  });

  it('hands its router the requests under a prefix, in any case, and passes every other by', async () => {
    const seen: string[] = [];
    const inner = express.Router();
    inner.get('/api/things/:id', (req, res) => void res.json({ id: req.params.id }));
    const outer = express();
    outer.use(gateUnder(['/api/things/'], (req, res, next) => (seen.push(req.path), inner(req, res, next))));
    outer.use(gateOutside('/api/', (_req, res) => void res.json({ page: true })));
    outer.use((_req, res) => void res.status(404).json({ miss: true }));
    const request = supertest(outer);
    expect((await request.get('/api/things/7').expect(200)).body).toEqual({ id: '7' });
    expect((await request.get('/API/Things/8').expect(200)).body).toEqual({ id: '8' });
    expect((await request.get('/api/other').expect(404)).body).toEqual({ miss: true });
    expect((await request.get('/home').expect(200)).body).toEqual({ page: true });
    expect(seen).toEqual(['/api/things/7', '/API/Things/8']);
  });
});

describe('the app behind its gates', () => {
  it('reaches a route of each table, a page and the A2A card, and misses as before', async () => {
    const tables = buildTables();
    // A route from each table, by its own path (no parameters), in upper case too: Express matches
    // routes case-insensitively, and so do the gates.
    for (const table of [tables.exchange, tables.commercial, tables.site]) {
      const spec = table.list().find((s) => s.method === 'get' && !/[{:*]/.test(s.path) && !s.auth)!;
      expect(spec, table.name).toBeDefined();
      const lower = await app.request.get(spec.path);
      expect(lower.status, `${table.name} ${spec.path}`).not.toBe(404);
      const upper = await app.request.get(spec.path.toUpperCase());
      expect(upper.status, `${table.name} ${spec.path.toUpperCase()}`).toBe(lower.status);
    }
    const page = await app.request.get('/proof-workflows/verify/').expect(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    await app.request.get('/a2a/jsonrpc/.well-known/agent-card.json').expect(200);
    const miss = await app.request.get('/api/no-such-route').expect(404);
    expect(miss.body.code).toBe('not_found');
  });
});
