// `npm run keys -- list | derived | import … | retire <keyId> | revoke <keyId> --from <ISO time> --reason
// <text>`: the operator's hand on the key history in Postgres (DATABASE_URL). In production a key enters
// the history only here (`import`: a production process whose key it lacks refuses to start and prints
// the command); in development processes add their own keys when they start. This also closes a key's
// period once every process runs with the new one, marks a compromised key revoked from a time, records a
// key used before the history began, and prints the keys still derived from the signing key so they can
// be pinned first. The procedures are in docs/security.md ("Rotating a signing key").
import { createDb } from '../shared/platform/db/knex';
import { env } from '../shared/platform/env';
import { explainPostgresError, urlTarget } from '../shared/platform/failures';
import { localRunFile, readLocalRun } from '../shared/platform/local-run';
import { derivationInput, derivedKeyPurposes } from '../shared/platform/sealing';
import {
  KeyHistoryError,
  importCurrentKey,
  importCommand,
  importKey,
  listKeys,
  ownKeyStatus,
  refusalOf,
  retireKey,
  revokeKey,
} from '../shared/platform/key-history';
import type { TrustRole } from '../shared/platform/trust';
import type { KeyRow } from '../shared/platform/key-history';
import { printable } from '../shared/platform/text';

const usage = `usage: npm run keys -- list
       npm run keys -- derived
       npm run keys -- own
       npm run keys -- import <public key> --from <ISO time|now> [--until <ISO time>] [--roles <role,...>]
       npm run keys -- retire <keyId>
       npm run keys -- revoke <keyId> --from <ISO time|now> --reason <text>
  list     every key the service has signed with: id, roles, period, status
  derived  the keys still derived from SERVICE_SIGNING_KEY (their variable unset), as settings to pin
           before the signing key changes: what they sealed opens only under them
  own      the keys of this command's settings (SERVICE_SIGNING_KEY, LOG_SIGNING_KEY): each one's id and
           status in the history, or the import command that puts it there (nothing is changed)
  import   put a key in the history (its raw ed25519 public key, base64url): without --until a current
           key processes may start with (in production the only way a key becomes trusted; the
           process that lacks it prints this command); with --until a key signed with before the
           history began, with its closed period; roles default to package,receipt,license,attestation
           (the log key's is log)
  retire   close a key's period once every process runs with the new key (it signs nothing more)
  revoke   trust what a compromised key signed only where the log shows it was logged before --from`;

const KEY_ID = /^[0-9a-f]{16}$/;

function line(r: KeyRow): string {
  const status = refusalOf(r) ?? 'current';
  const until = r.valid_until ? r.valid_until.toISOString() : '…';
  return `${r.key_id}  ${[...r.roles].sort().join(',').padEnd(36)}  ${r.valid_from.toISOString()} – ${until}  ${status}${
    r.reason ? ` (${printable(r.reason)})` : ''
  }`;
}

function options(args: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < args.length; i += 2) {
    const name = args[i]!;
    const value = args[i + 1];
    if (!name.startsWith('--') || value === undefined) throw new KeyHistoryError(`unexpected ${name}`);
    out.set(name, value);
  }
  return out;
}

/**
 * `NAME=<hex>` for each key derived from the signing key because its variable is unset: what it is
 * derived from (64 bytes), which set as the variable derives the same key under any signing key.
 */
export function derivedSettings(): string[] {
  return Object.entries(derivedKeyPurposes)
    .filter(([name]) => !env[name as keyof typeof derivedKeyPurposes])
    .map(([name, purpose]) => `${name}=${derivationInput(purpose).toString('hex')}`);
}

/** DATABASE_URL, else the Postgres of the npm start running from this checkout (said on stderr). */
function databaseOf(): { url: string; source: string } | undefined {
  if (env.DATABASE_URL) return { url: env.DATABASE_URL, source: 'DATABASE_URL' };
  const run = readLocalRun(env.DATA_DIR);
  if (!run) return undefined;
  process.stderr.write(`keys: the database of the npm start running here (pid ${run.pid})\n`);
  return { url: run.databaseUrl, source: `the npm start running here (${localRunFile(env.DATA_DIR)})` };
}

async function main(): Promise<number> {
  const [command, keyId, ...rest] = process.argv.slice(2);
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  if (command === 'derived' && keyId === undefined) {
    const lines = derivedSettings();
    process.stdout.write(
      lines.length
        ? `${lines.join('\n')}\n`
        : '# SEALING_KEY, BALLOT_KEY and PROOF_INPUT_KEY are all set: nothing derives from the signing key\n',
    );
    return 0;
  }
  const known = ['list', 'own', 'retire', 'revoke', 'import'].includes(command ?? '');
  const needsKey = command === 'retire' || command === 'revoke';
  const bare = command === 'list' || command === 'own';
  if (!known || (bare && (keyId !== undefined || rest.length)) || (needsKey && !keyId)) {
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  if (command === 'import' && !keyId) {
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  if (needsKey && !KEY_ID.test(keyId!)) {
    process.stderr.write(
      `keys: ${keyId} is not a key id (16 hex characters, as npm run keys -- list shows)\n`,
    );
    return 2;
  }
  const database = databaseOf();
  if (!database) {
    process.stderr.write(
      `keys: DATABASE_URL is not set, and no npm start runs from this checkout (${localRunFile(env.DATA_DIR)}): set DATABASE_URL to the database whose keys these are\n`,
    );
    return 2;
  }
  const db = createDb(database.url, { poolMax: 1 });
  try {
    if (command === 'list') {
      const rows = await listKeys(db);
      if (!rows.length) process.stderr.write('keys: the trust root holds no keys yet\n');
      for (const r of rows) process.stdout.write(`${line(r)}\n`);
    } else if (command === 'own') {
      for (const { own, row, missing } of await ownKeyStatus(db))
        process.stdout.write(
          `${own.variable}  ${missing ? `${own.key.keyId}  ${missing}: ${importCommand(own)}` : line(row!)}\n`,
        );
    } else if (command === 'retire') {
      if (rest.length) throw new KeyHistoryError(`unexpected ${rest[0]}`);
      const r = await retireKey(db, keyId!);
      process.stdout.write(`retired: ${line(r)}\n`);
    } else if (command === 'import') {
      const opts = options(rest);
      const unknown = [...opts.keys()].find((k) => !['--from', '--until', '--roles'].includes(k));
      if (unknown) throw new KeyHistoryError(`unexpected ${unknown}`);
      const time = (name: string, now = false) => {
        const text = opts.get(name);
        if (now && text === 'now') return new Date();
        if (!text || !/^\d{4}-\d{2}-\d{2}T/.test(text) || Number.isNaN(Date.parse(text)))
          throw new KeyHistoryError(
            `${name} <ISO time${now ? '|now' : ''}> is required, such as 2026-11-25T10:00:00Z`,
          );
        return new Date(text);
      };
      const roles = (opts.get('--roles') ?? 'package,receipt,license,attestation').split(',') as TrustRole[];
      if (!opts.has('--until')) {
        const { row, added } = await importCurrentKey(db, {
          publicKey: keyId!,
          roles,
          from: time('--from', true),
        });
        process.stdout.write(`${added ? 'imported' : 'in the history already'}: ${line(row)}\n`);
        return 0;
      }
      const r = await importKey(db, {
        publicKey: keyId!,
        roles,
        from: time('--from'),
        until: time('--until'),
      });
      process.stdout.write(`imported: ${line(r)}\n`);
    } else {
      const opts = options(rest);
      const unknown = [...opts.keys()].find((k) => k !== '--from' && k !== '--reason');
      if (unknown) throw new KeyHistoryError(`unexpected ${unknown}`);
      const fromText = opts.get('--from');
      if (!fromText) throw new KeyHistoryError('--from <ISO time|now> is required');
      const from = fromText === 'now' ? new Date() : new Date(fromText);
      if (fromText !== 'now' && !/^\d{4}-\d{2}-\d{2}T/.test(fromText))
        throw new KeyHistoryError('--from is an ISO time such as 2026-11-25T10:00:00Z, or now');
      const r = await revokeKey(db, keyId!, from, opts.get('--reason') ?? '');
      process.stdout.write(`revoked: ${line(r)}\n`);
    }
    return 0;
  } catch (err) {
    if (err instanceof KeyHistoryError) {
      process.stderr.write(`keys: ${err.message}\n`);
      return 1;
    }
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && /^(E[A-Z]+|28P01|28000|3D000)$/.test(code)) {
      const failure = explainPostgresError(err, database.source, urlTarget(database.url));
      process.stderr.write(`keys: ${failure.what}. Fix: ${failure.fix}.\n`);
      return 1;
    }
    throw err;
  } finally {
    await db.destroy();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = await main();
