// The columns sealed under a key with a history (SEALING_KEY, BALLOT_KEY): a report of which key opens
// each row, and the re-seal that moves rows sealed under an earlier key to the current one. Each product
// line lists its own columns; `release` runs both over all of them, and each process samples them at start.
import type { Knex } from 'knex';
import { SealedUnopenable, keyRing, openWithRing, seal } from './sealing';
import type { KeyRing, RingName } from './sealing';

export interface SealedColumn {
  table: string;
  column: string;
  ring: RingName;
  /** The row's key column (default `id`); the re-seal pages by it. */
  idColumn?: string;
  /** The associated data the row's value was sealed with. */
  aad: (row: { id: string }) => string;
}

export interface ColumnReport {
  table: string;
  column: string;
  ring: RingName;
  /** Rows with a value. */
  sealed: number;
  /** Rows sealed under an earlier key, moved to the current one by this run. */
  resealed: number;
  /** Rows no configured key opens: altered, moved from another row, or sealed under a key not listed. */
  unopenable: number;
  /** The first few of those, by row key (for the operator; ids are names, not secrets). */
  examples: string[];
}

const idOf = (c: SealedColumn) => c.idColumn ?? 'id';

/**
 * Pages through a column's rows (by key, `batch` at a time) and opens each value. With `reseal`, a
 * value that opens only under an earlier key is sealed again under the current one, in one
 * transaction per batch, written only if the row still holds the value read (a concurrent writer
 * wins). Safe to run again and from several processes: a row already current is left alone.
 */
export async function scanSealedColumn(
  db: Knex,
  c: SealedColumn,
  options: { reseal: boolean; batch?: number; limit?: number; ring?: KeyRing },
): Promise<ColumnReport> {
  // Made on the first row: an empty column needs no key (npm start's release in production has none).
  let ring = options.ring;
  const batch = options.batch ?? 500;
  const id = idOf(c);
  const report: ColumnReport = {
    table: c.table,
    column: c.column,
    ring: c.ring,
    sealed: 0,
    resealed: 0,
    unopenable: 0,
    examples: [],
  };
  let after: string | null = null;
  for (;;) {
    const take = options.limit === undefined ? batch : Math.min(batch, options.limit - report.sealed);
    if (take <= 0) break;
    const done: number = await db.transaction(async (trx: Knex.Transaction) => {
      const q = trx(c.table).whereNotNull(c.column).orderBy(id).limit(take).select({ id, value: c.column });
      if (after !== null) q.where(id, '>', after);
      const rows = (await q) as Array<{ id: string; value: Buffer }>;
      for (const row of rows) {
        report.sealed++;
        after = row.id;
        ring ??= keyRing(c.ring);
        let opened: { plain: Buffer; index: number };
        try {
          opened = openWithRing(ring, c.aad(row), row.value);
        } catch (err) {
          if (!(err instanceof SealedUnopenable)) throw err;
          report.unopenable++;
          if (report.examples.length < 3) report.examples.push(row.id);
          continue;
        }
        if (opened.index === 0 || !options.reseal) continue;
        const moved = await trx(c.table)
          .where(id, row.id)
          .where(c.column, row.value)
          .update({ [c.column]: seal(ring.current, c.aad(row), opened.plain) });
        report.resealed += moved;
      }
      return rows.length;
    });
    if (done < take) break;
  }
  return report;
}

/** Every listed column, scanned one after the other. */
export async function scanSealedColumns(
  db: Knex,
  columns: readonly SealedColumn[],
  options: { reseal: boolean; batch?: number; limit?: number },
): Promise<ColumnReport[]> {
  const reports: ColumnReport[] = [];
  for (const c of columns) {
    if (!(await db.schema.hasColumn(c.table, c.column))) continue;
    reports.push(await scanSealedColumn(db, c, options));
  }
  return reports;
}

/** One line per column with rows no key opens: where, how many, why, and what fixes it. */
export function unopenableLines(reports: readonly ColumnReport[]): string[] {
  return reports
    .filter((r) => r.unopenable > 0)
    .map(
      (r) =>
        `${r.table}.${r.column}: ${r.unopenable} of ${r.sealed} row(s) open under no configured ${r.ring} ` +
        `(${r.ring} or ${r.ring}_PREVIOUS; e.g. ${r.examples.join(', ')}): sealed under a key not listed, or ` +
        `altered; add the key they were sealed with to ${r.ring}_PREVIOUS (npm run keys -- derived prints a ` +
        `key derived from a signing key), docs/operations.md "Rotating a sealing or ballot key"`,
    );
}
