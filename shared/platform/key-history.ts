// The key history in Postgres (`trust_keys`): in development and tests each process adds the keys it
// signs with at start; in production a key enters it only through `npm run keys -- import`, and a
// process whose key it does not hold refuses to start, printing that command. Every process refuses to
// start with a key the operator retired or revoked; while it runs it rereads their status every few
// seconds and stops signing with a key that was closed. Verifiers in the service read the whole history
// (the trust root document is built from it), so what was signed under an earlier key still verifies
// after the service moved to a new one.
import type { Knex } from 'knex';
import { canonicalJson } from './canonical';
import { keyIdOf, sha256Hex } from './crypto';
import type { Db } from './db/knex';
import { env, isProduction } from './env';
import { isUnavailableError } from './errors';
import { StartupFailure, StartupRefused } from './failures';
import { logOrigin, logSigningKey, logSigningKeyAvailable, ownKeys, setKeyRefusal } from './keys';
import type { OwnKey } from './keys';
import { logger } from './log';
import { TRUST_ROOT_FORMAT, logVkey, parseTrustRoot, trustKeyShape } from './trust';
import type { TrustIssuer, TrustKey, TrustRole, TrustRoot } from './trust';
import { parsePolicy } from './translog/policy';
import { logWitnesses, witnessPolicyLines } from './translog/service-log';

type Conn = Knex | Knex.Transaction;

/** How old the status a process signs on, and the history a verifier reads, may be. */
export const KEY_STATUS_TTL_MS = 5_000;
/**
 * A retired key's period ends this long after the operator retired it: every process has learned of it
 * and stopped signing with it by then (KEY_STATUS_TTL_MS, twice over), so nothing signed with it in
 * between falls outside its period.
 */
export const RETIRE_GRACE_MS = 2 * KEY_STATUS_TTL_MS;
/** One lock for changes to the history: registrations, retirements and revocations take turns. */
const HISTORY_LOCK = 6962_0025;
const EPOCH = '1970-01-01T00:00:00.000Z';

export interface KeyRow {
  key_id: string;
  public_key: string;
  roles: TrustRole[];
  valid_from: Date;
  valid_until: Date | null;
  revoked_from: Date | null;
  reason: string | null;
  changed_at: Date;
}

const iso = (d: Date): string => d.toISOString();

/** A row as the trust root lists it. */
export const trustKeyOf = (r: KeyRow): TrustKey => ({
  keyId: r.key_id,
  publicKey: r.public_key,
  roles: [...r.roles].sort() as TrustRole[],
  validFrom: iso(r.valid_from),
  ...(r.valid_until ? { validUntil: iso(r.valid_until) } : {}),
  ...(r.revoked_from ? { revokedFrom: iso(r.revoked_from) } : {}),
});

/** Why a key may not sign any more (retired or revoked), or null while it may. */
export function refusalOf(r: Pick<KeyRow, 'valid_until' | 'revoked_from'>): string | null {
  if (r.revoked_from) return `is revoked from ${iso(r.revoked_from)}`;
  if (r.valid_until) return `was retired (valid until ${iso(r.valid_until)})`;
  return null;
}

/**
 * Adds this process's keys to the history. A key never seen opens its period when this process loaded
 * it; a key seen before keeps the earliest such time while it is current, gains any role it lacked, and
 * is never reopened once retired or revoked. Adding a key closes no other: processes restart in any
 * order, and those still on the old key keep signing with it until they do. The very first key of a
 * role (an empty history, as on the first start after this table was made) is taken to have signed
 * everything before it: its period starts at 1970-01-01, so what a deployment signed before it kept a
 * history still verifies.
 */
export async function registerSigningKeys(db: Db, keys: readonly OwnKey[] = ownKeys()): Promise<KeyRow[]> {
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(?)', [HISTORY_LOCK]);
    const rows: KeyRow[] = [];
    for (const { key, roles, loadedAt } of keys) {
      const { rows: out } = (await trx.raw(
        `insert into trust_keys as t (key_id, public_key, roles, valid_from, changed_at)
         values (?, ?, ?::text[],
           case when exists (select 1 from trust_keys where roles && ?::text[]) then ?::timestamptz
                else ?::timestamptz end,
           now())
         on conflict (key_id) do update set
           roles = array(select distinct r from unnest(t.roles || excluded.roles) r order by r),
           valid_from = case when t.valid_until is null and t.revoked_from is null
                             then least(t.valid_from, excluded.valid_from) else t.valid_from end,
           changed_at = case
             when not (excluded.roles <@ t.roles)
               or (t.valid_until is null and t.revoked_from is null and excluded.valid_from < t.valid_from)
             then now() else t.changed_at end
         returning *`,
        [key.keyId, key.publicKey, roles, roles, iso(loadedAt), EPOCH],
      )) as { rows: KeyRow[] };
      rows.push(out[0]!);
    }
    return rows;
  });
}

/** The history's rows for the given key ids. */
async function statusOf(db: Conn, keyIds: readonly string[]): Promise<KeyRow[]> {
  return (await db('trust_keys').whereIn('key_id', keyIds)) as KeyRow[];
}

/**
 * Whether a process adds its own keys to the history: outside production only. In production the
 * operator imports each key (`npm run keys -- import`), so no process started against the database with
 * a key of its own makes that key trusted.
 */
export const registersOwnKeys = (): boolean => !isProduction(env);

/** The command that puts one of this process's keys in the history, as the operator runs it. */
export function importCommand(own: Pick<OwnKey, 'key' | 'roles'>): string {
  return `npm run keys -- import ${own.key.publicKey} --from now --roles ${[...own.roles].sort().join(',')}`;
}

/** Why the history does not hold one of this process's keys with every role it signs, or null. */
function missingFrom(own: OwnKey, row: KeyRow | undefined): string | null {
  if (!row) return 'is not in the trust root';
  const lacking = own.roles.filter((r) => !row.roles.includes(r));
  return lacking.length ? `is in the trust root without the role ${lacking.join(', ')}` : null;
}

/**
 * This process's own keys as the history holds them: each with its row (if any) and, when the history
 * lacks it or one of its roles, why (`npm run keys -- own` prints the import command for those).
 */
export async function ownKeyStatus(
  db: Db,
): Promise<Array<{ own: OwnKey; row: KeyRow | undefined; missing: string | null }>> {
  const keys = ownKeys();
  const rows = await statusOf(
    db,
    keys.map((k) => k.key.keyId),
  );
  return keys.map((own) => {
    const row = rows.find((r) => r.key_id === own.key.keyId);
    return { own, row, missing: missingFrom(own, row) };
  });
}

/** The line a production process says when the history does not hold its key, with the command to run. */
export function untrustedKeyLine(own: OwnKey, why: string): string {
  return `${own.variable} is key ${own.key.keyId}, which ${why}; in production a key enters it only by import: run \`${importCommand(own)}\` with this deployment's DATABASE_URL, then start this process again (docs/security.md, "Rotating a signing key")`;
}

function applyStatus(keys: readonly OwnKey[], rows: readonly KeyRow[]): void {
  for (const own of keys) {
    const row = rows.find((r) => r.key_id === own.key.keyId);
    const missing = registersOwnKeys() ? null : missingFrom(own, row);
    setKeyRefusal(
      own.key.keyId,
      missing ? `${missing} (${importCommand(own)})` : row ? refusalOf(row) : null,
    );
  }
}

/** The line a process says when it will not start with a closed key, and how to fix it. */
export function closedKeyFailure(own: Pick<OwnKey, 'variable'>, row: KeyRow): StartupFailure {
  const fix = `set ${own.variable} to the new key on this process and start it again (docs/security.md, "Rotating a signing key")`;
  return new StartupFailure(
    `${own.variable} is key ${row.key_id}, which ${refusalOf(row)}: ${fix}`,
    fix,
    true,
  );
}

export interface KeyWatch {
  stop(): void;
}

/**
 * At a process's start: registers its keys (in production: finds each in the history, with every role
 * it signs, or refuses to start with exit 78 and one line per key naming the import command) and
 * refuses to start (one line, naming the fix) when one of them is retired or revoked; then rereads
 * their status every KEY_STATUS_TTL_MS, so a key retired while the process runs stops signing within
 * that time. With Postgres unreachable at start the process starts anyway and registers (or checks)
 * when it can; it could do nothing that needs a signature without it, and in production a key the
 * history then turns out not to hold signs nothing.
 */
export async function watchSigningKeys(db: Db): Promise<KeyWatch> {
  const keys = ownKeys();
  const registers = registersOwnKeys();
  let registered = false;
  try {
    const rows = registers
      ? await registerSigningKeys(db, keys)
      : await statusOf(
          db,
          keys.map((k) => k.key.keyId),
        );
    registered = true;
    const untrusted = registers
      ? []
      : keys.flatMap((own) => {
          const why = missingFrom(
            own,
            rows.find((r) => r.key_id === own.key.keyId),
          );
          return why ? [`Refusing to start in production: ${untrustedKeyLine(own, why)}`] : [];
        });
    if (untrusted.length) throw new StartupRefused(untrusted, 78);
    for (const own of keys) {
      const row = rows.find((r) => r.key_id === own.key.keyId)!;
      if (refusalOf(row)) throw closedKeyFailure(own, row);
    }
    applyStatus(keys, rows);
  } catch (err) {
    if (!isUnavailableError(err)) throw err;
    logger.warn({ err: (err as Error).message }, 'signing keys not registered yet: Postgres is unreachable');
  }
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    void (async () => {
      if (!registered) {
        if (registers) await registerSigningKeys(db, keys);
        registered = true;
      }
      applyStatus(
        keys,
        await statusOf(
          db,
          keys.map((k) => k.key.keyId),
        ),
      );
    })()
      .catch((err: Error) => logger.warn({ err: err.message }, 'signing key status not read'))
      .finally(() => {
        running = false;
      });
  }, KEY_STATUS_TTL_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

// --- What verifiers read

export interface ServiceTrust {
  keys: TrustKey[];
  /** The latest change to the history. */
  issuedAt: string;
  /** Changes whenever any key's period, roles or revocation changes. */
  version: string;
}

const registeredOn = new WeakMap<Db, Promise<unknown>>();
const cached = new WeakMap<Db, { at: number; value: Promise<ServiceTrust> }>();

/**
 * The service's key history as verifiers read it, at most KEY_STATUS_TTL_MS old. Outside production it
 * holds this process's own keys in every case (registered on first use, for a process that never ran
 * watchSigningKeys: tests, tools); in production only what was imported.
 */
export function serviceTrust(db: Db): Promise<ServiceTrust> {
  const hit = cached.get(db);
  if (hit && Date.now() - hit.at < KEY_STATUS_TTL_MS) return hit.value;
  const value = (async () => {
    let registering = registeredOn.get(db);
    if (!registering) {
      registering = registersOwnKeys() ? registerSigningKeys(db) : Promise.resolve([]);
      registeredOn.set(db, registering);
      registering.catch(() => registeredOn.delete(db));
    }
    await registering;
    const rows = (await db('trust_keys').orderBy('valid_from').orderBy('key_id')) as KeyRow[];
    const keys = rows.map(trustKeyOf);
    const latest = rows.reduce((t, r) => Math.max(t, r.changed_at.getTime()), 0);
    return {
      keys,
      issuedAt: new Date(latest).toISOString(),
      version: sha256Hex(canonicalJson(keys)).slice(0, 32),
    };
  })();
  value.catch(() => cached.delete(db));
  cached.set(db, { at: Date.now(), value });
  return value;
}

/** Forgets the history read so far (a test that changes it, then checks at once). */
export function forgetServiceTrust(db: Db): void {
  cached.delete(db);
}

/**
 * When the service's own log first included the leaf kept under `key` (a package's proof id), and that
 * leaf's hash: what holds a signature against its key's revocation, since the log recorded it then.
 */
export async function loggedAt(
  db: Conn,
  key: string,
): Promise<{ leafHash: string; loggedAt: string } | undefined> {
  const { rows } = (await db.raw(
    `select encode(l.leaf_hash, 'hex') as leaf_hash,
       (select h.timestamp from tree_heads h where h.tree_size > l.leaf_index order by h.tree_size limit 1)
         as logged_at
     from translog_leaves l where l.proof_id = ?`,
    [key],
  )) as { rows: Array<{ leaf_hash: string; logged_at: string | null }> };
  const row = rows[0];
  return row?.logged_at ? { leafHash: row.leaf_hash, loggedAt: row.logged_at } : undefined;
}

// --- The trust root document

/** The policy text a verifier of this log takes: its log keys (none revoked), then LOG_WITNESSES. */
function policyText(logKeys: readonly TrustKey[], origin: string, tiles: string): string {
  const logs = logKeys
    .filter((k) => !k.revokedFrom)
    .map((k) => `log ${logVkey(origin, k.publicKey)} ${tiles}\n`)
    .join('');
  const witnesses = witnessPolicyLines();
  const text = logs + witnesses;
  parsePolicy(text);
  return text;
}

/**
 * The trust root (proof-exchange/trust-root/v1) built from the key history: the log (its origin, the
 * key it signs checkpoints with now, its tile prefix), every key with its roles and period, the
 * witnesses and the policy, and `issuers` (the credential issuers the organizations accept, which the
 * product line lists: the platform reads none). `tiles` is the tile prefix's absolute URL.
 */
export async function trustRootDocument(
  db: Db,
  tiles: string,
  issuers?: readonly TrustIssuer[],
): Promise<TrustRoot> {
  const trust = await serviceTrust(db);
  const origin = logOrigin();
  const keys = trust.keys.map((k) =>
    k.roles.includes('log') ? { ...k, vkey: logVkey(origin, k.publicKey) } : k,
  );
  const current = logSigningKeyAvailable() ? logSigningKey().keyId : undefined;
  const logKey =
    keys.find((k) => k.keyId === current) ??
    [...keys].reverse().find((k) => k.roles.includes('log') && !k.validUntil && !k.revokedFrom);
  const doc: TrustRoot = {
    format: TRUST_ROOT_FORMAT,
    issuedAt: trust.issuedAt,
    log: { origin, vkey: logKey?.vkey ?? null, tiles },
    keys,
    witnesses: logWitnesses(),
    policy: policyText(
      keys.filter((k) => k.roles.includes('log')),
      origin,
      tiles,
    ),
    ...(issuers ? { issuers: [...issuers] } : {}),
  };
  return parseTrustRoot(doc);
}

// --- The operator's changes (npm run keys)

export class KeyHistoryError extends Error {}

async function lockedRow(trx: Knex.Transaction, keyId: string): Promise<KeyRow> {
  await trx.raw('select pg_advisory_xact_lock(?)', [HISTORY_LOCK]);
  const row = (await trx('trust_keys').where('key_id', keyId).forUpdate().first()) as KeyRow | undefined;
  if (!row) throw new KeyHistoryError(`no key ${keyId} in the history (npm run keys -- list)`);
  return row;
}

export async function listKeys(db: Db): Promise<KeyRow[]> {
  return (await db('trust_keys').orderBy('valid_from').orderBy('key_id')) as KeyRow[];
}

/**
 * Closes a key's period: it stays valid for what was signed before, and no process signs with it
 * again. Refused while no other current key has each of its roles (no process has started with the
 * new key yet: retiring now would leave nothing to sign with).
 */
export async function retireKey(db: Db, keyId: string): Promise<KeyRow> {
  return db.transaction(async (trx) => {
    const row = await lockedRow(trx, keyId);
    if (row.valid_until)
      throw new KeyHistoryError(`key ${keyId} is already retired (valid until ${iso(row.valid_until)})`);
    const others = (await trx('trust_keys')
      .whereNot('key_id', keyId)
      .whereNull('valid_until')
      .whereNull('revoked_from')) as KeyRow[];
    const uncovered = row.roles.filter((role) => !others.some((o) => o.roles.includes(role)));
    if (uncovered.length)
      throw new KeyHistoryError(
        `no other current key signs ${uncovered.join(', ')}: set the new key on a process and start it first, then retire ${keyId}`,
      );
    const [out] = (await trx('trust_keys')
      .where('key_id', keyId)
      .update({
        valid_until: trx.raw(`greatest(valid_from, now() + make_interval(secs => ?))`, [
          RETIRE_GRACE_MS / 1000,
        ]),
        changed_at: trx.fn.now(),
      })
      .returning('*')) as KeyRow[];
    return out!;
  });
}

/**
 * Puts a key in the history, the one way a key enters it in production. With `until`: a key the
 * service signed with before the history began (a key changed before this release, whose items would
 * otherwise name an unknown key), with its closed period; no process can sign with it (it is retired),
 * and it is refused for a key the history already holds. Without `until`: a current key, valid from
 * `from`, that processes may then start with (importCurrentKey).
 */
function checkedKey(key: { publicKey: string; roles: TrustRole[]; from: Date }): void {
  if (Number.isNaN(key.from.getTime())) throw new KeyHistoryError('--from is not a time');
  const parsed = trustKeyShape.safeParse({
    keyId: '0'.repeat(16),
    publicKey: key.publicKey,
    roles: key.roles,
    validFrom: iso(key.from),
  });
  if (!parsed.success) throw new KeyHistoryError(`not a key: ${parsed.error.issues[0]?.message}`);
}

export async function importKey(
  db: Db,
  key: { publicKey: string; roles: TrustRole[]; from: Date; until: Date },
): Promise<KeyRow> {
  checkedKey(key);
  if (!(key.from < key.until)) throw new KeyHistoryError('--from must be before --until');
  if (key.until.getTime() > Date.now())
    throw new KeyHistoryError(
      '--until is in the future: only a key no process signs with any more is imported',
    );
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(?)', [HISTORY_LOCK]);
    const keyId = keyIdOf(key.publicKey);
    if (await trx('trust_keys').where('key_id', keyId).first())
      throw new KeyHistoryError(`key ${keyId} is in the history already`);
    const [row] = (await trx('trust_keys')
      .insert({
        key_id: keyId,
        public_key: key.publicKey,
        roles: [...new Set(key.roles)].sort(),
        valid_from: key.from,
        valid_until: key.until,
        changed_at: trx.fn.now(),
      })
      .returning('*')) as KeyRow[];
    return row!;
  });
}

/**
 * Imports a current key: valid from `from` (at most a minute ahead), with `roles`. A key the history
 * holds as current gains the roles it lacks (`added` false when it had them all); a retired or revoked
 * key is never current again.
 */
export async function importCurrentKey(
  db: Db,
  key: { publicKey: string; roles: TrustRole[]; from: Date },
): Promise<{ row: KeyRow; added: boolean }> {
  checkedKey(key);
  if (key.from.getTime() > Date.now() + 60_000)
    throw new KeyHistoryError('--from is in the future: a key is imported from now, or from when it began');
  const roles = [...new Set(key.roles)].sort();
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(?)', [HISTORY_LOCK]);
    const keyId = keyIdOf(key.publicKey);
    const found = (await trx('trust_keys').where('key_id', keyId).forUpdate().first()) as KeyRow | undefined;
    if (found) {
      const closed = refusalOf(found);
      if (closed) throw new KeyHistoryError(`key ${keyId} ${closed}: a closed key is never current again`);
      const lacking = roles.filter((r) => !found.roles.includes(r as TrustRole));
      if (!lacking.length) return { row: found, added: false };
      const [row] = (await trx('trust_keys')
        .where('key_id', keyId)
        .update({ roles: [...found.roles, ...lacking].sort(), changed_at: trx.fn.now() })
        .returning('*')) as KeyRow[];
      return { row: row!, added: true };
    }
    const [row] = (await trx('trust_keys')
      .insert({
        key_id: keyId,
        public_key: key.publicKey,
        roles,
        valid_from: key.from,
        changed_at: trx.fn.now(),
      })
      .returning('*')) as KeyRow[];
    return { row: row!, added: true };
  });
}

/**
 * Marks a key revoked from a time: what it signed is trusted only where the log shows it was logged
 * before then. A later revocation of the same key can only move the time earlier.
 */
export async function revokeKey(db: Db, keyId: string, from: Date, reason: string): Promise<KeyRow> {
  if (Number.isNaN(from.getTime())) throw new KeyHistoryError('--from is not a time');
  if (from.getTime() > Date.now() + 60_000)
    throw new KeyHistoryError('--from is in the future: a revocation starts at or before now');
  if (!reason.trim()) throw new KeyHistoryError('--reason is required');
  return db.transaction(async (trx) => {
    const row = await lockedRow(trx, keyId);
    const at = row.revoked_from && row.revoked_from < from ? row.revoked_from : from;
    const [out] = (await trx('trust_keys')
      .where('key_id', keyId)
      .update({ revoked_from: at, reason: reason.trim().slice(0, 1000), changed_at: trx.fn.now() })
      .returning('*')) as KeyRow[];
    return out!;
  });
}
