// Development money at start-up: a production process refuses a database holding payments settled on
// a development chain (npm start's demo money) unless the operator says to keep them.
import type { Knex } from 'knex';
import type { Env } from '../platform/env';

/** One line when the database holds development settlements and production has not accepted them. */
export async function developmentSettlementIssues(
  db: Knex,
  settings: Pick<Env, 'ALLOW_DEVELOPMENT_SETTLEMENTS'>,
): Promise<string[]> {
  if (settings.ALLOW_DEVELOPMENT_SETTLEMENTS) return [];
  // Before `release` made the column, there is nothing marked yet: readiness says migrations are due.
  if (!(await db.schema.hasColumn('payments', 'development'))) return [];
  const rows = (await db('payments')
    .where('development', true)
    .select('chain')
    .count({ n: '*' })
    .groupBy('chain')
    .orderBy('chain')) as Array<{ chain: string; n: string | number }>;
  if (rows.length === 0) return [];
  const total = rows.reduce((sum, r) => sum + Number(r.n), 0);
  return [
    `the database holds ${total} payment(s) settled on a development chain (${rows.map((r) => r.chain).join(', ')}), ` +
      `demo money from npm start; start production on a database of its own, ` +
      `or set ALLOW_DEVELOPMENT_SETTLEMENTS=true to keep them (they never count as revenue)`,
  ];
}
