// An organization key's scopes on every write route, not a sample: the route tables are walked, and each
// route that takes an organization's key and writes (POST, PUT, DELETE) refuses a read key with 403
// insufficient_scope before anything is written; a key of another line is refused the same way, and the
// key of the route's own line (or admin) is let past the scope check. A route added later is covered
// without naming it here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTables } from '../../api/tables';
import type { AuthMode } from '../../api/http/auth';
import { keyScopes } from '../../shared/licensing/scopes';
import type { KeyScope } from '../../shared/licensing/scopes';
import { productLines } from '../../shared/licensing/tiers';
import { bearer, grantLicense, testApp } from '../helpers';
import type { TestApp } from '../helpers';

let app: TestApp;
const keys = new Map<KeyScope, { Authorization: string }>();

beforeAll(async () => {
  app = testApp();
  const org = await grantLicense(app.deps.db, 'Business');
  for (const scope of keyScopes) {
    const res = await app.request
      .post('/api/v1/organization/keys')
      .set(org.auth)
      .send({ name: `${scope} key`, scopes: [scope] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    keys.set(scope, bearer(res.body.apiKey as string));
  }
});
afterAll(async () => {
  await app.close();
});

/** The authentication modes under which an organization's key is the caller. */
const takesOrganizationKey: ReadonlySet<AuthMode> = new Set(['operator-or-license', 'agent-optional', 'job']);

const writes = Object.values(buildTables())
  .flatMap((table) => table.list())
  .filter((r) => r.method !== 'get' && takesOrganizationKey.has(r.auth ?? 'public'))
  .map((r) => ({
    method: r.method,
    // Any id: the scope is checked before the route looks anything up.
    path: r.path.replace(
      /\{(\w+)\}/g,
      (_m: string, name: string) => `${name.toLowerCase().slice(0, 3)}_0000`,
    ),
    template: r.path,
    product: r.product,
    scope: r.scope,
  }));

/** Rows of every table of the schema: what a refused request must leave as it was. */
async function rowCounts(): Promise<Record<string, number>> {
  const tables = await app.deps.db.raw<{ rows: Array<{ table_name: string }> }>(
    "select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'",
  );
  const counts: Record<string, number> = {};
  for (const { table_name } of tables.rows)
    counts[table_name] = Number((await app.deps.db(table_name).count('* as n'))[0]!.n);
  return counts;
}

const send = (w: (typeof writes)[number], auth: { Authorization: string }) => {
  const { method, path } = w;
  const req =
    method === 'post'
      ? app.request.post(path)
      : method === 'put'
        ? app.request.put(path)
        : method === 'delete'
          ? app.request.delete(path)
          : app.request.get(path);
  return req.set(auth).send({});
};

describe('organization key scopes on every write route', () => {
  it('covers each product line’s writes', () => {
    for (const line of productLines)
      expect(writes.filter((w) => w.product === line).length, `write routes of ${line}`).toBeGreaterThan(0);
  });

  it('a read key writes nowhere: 403 insufficient_scope on each, and not a row written', async () => {
    const before = await rowCounts();
    const answered: string[] = [];
    for (const w of writes) {
      const res = await send(w, keys.get('read')!);
      answered.push(`${w.method.toUpperCase()} ${w.template} ${res.status} ${res.body?.code}`);
    }
    expect(answered).toEqual(
      writes.map((w) => `${w.method.toUpperCase()} ${w.template} 403 insufficient_scope`),
    );
    expect(await rowCounts()).toEqual(before);
  });

  it('a key of one line writes none of another line’s routes, nor those outside every line', async () => {
    const before = await rowCounts();
    const refused: string[] = [];
    const expected: string[] = [];
    for (const line of productLines) {
      for (const w of writes) {
        const needed = w.scope ?? w.product ?? 'admin';
        if (needed === line) continue;
        const res = await send(w, keys.get(line)!);
        expected.push(`${line} ${w.method.toUpperCase()} ${w.template} 403 insufficient_scope`);
        refused.push(`${line} ${w.method.toUpperCase()} ${w.template} ${res.status} ${res.body?.code}`);
      }
    }
    expect(refused).toEqual(expected);
    expect(await rowCounts()).toEqual(before);
  });

  it('the key of the route’s own line, or an admin key, passes the scope check', async () => {
    const passed: string[] = [];
    for (const w of writes) {
      const own = (w.scope ?? w.product ?? 'admin') as KeyScope;
      for (const scope of new Set<KeyScope>([own, 'admin'])) {
        const res = await send(w, keys.get(scope)!);
        // Past the scope: whatever the route says of an empty body or an unknown id, never a scope refusal.
        if (res.body?.code === 'insufficient_scope' || res.status >= 500)
          passed.push(`${scope} ${w.method.toUpperCase()} ${w.template} ${res.status} ${res.body?.code}`);
      }
    }
    expect(passed).toEqual([]);
  });
});
