// What a leaf of the log is made of. New appends log a compact statement — which kind of document,
// its id, and the sha256 of its canonical bytes — not the document itself; leaves made before this
// format keep the canonical signed package (without its log proof) as their entry. Pure and offline.
import { canonicalJson } from '../canonical';
import { sha256Hex } from '../crypto';

export const LOG_ENTRY_TYPE = 'proof-exchange/log-entry/v1';

/** What the log holds statements about. */
export const logEntryKinds = [
  'workflow_package',
  'governance_package',
  'auction_package',
  'treasury_package',
  'stage_record',
  'receipt',
  'trust_root',
  'ceremony_transcript',
  'approver_set',
  'workflow_approvers',
  'credential_issuer',
  'revocation_root',
] as const;
export type LogEntryKind = (typeof logEntryKinds)[number];

/** The entry bound of tlog-tiles' entry bundles (a big-endian uint16 length). */
export const MAX_ENTRY_BYTES = 0xffff;

export interface LogEntry {
  type: typeof LOG_ENTRY_TYPE;
  kind: LogEntryKind;
  id: string;
  /** sha256 of the document's canonical bytes, lowercase hex. */
  sha256: string;
}

const HEX64 = /^[0-9a-f]{64}$/;

/** The entry bytes: canonical JSON of the statement. */
export function logEntryBytes(kind: LogEntryKind, id: string, sha256: string): Buffer {
  if (!logEntryKinds.includes(kind)) throw new Error(`not a log entry kind: ${kind}`);
  if (!HEX64.test(sha256)) throw new Error('an entry names a sha256 as 64 lowercase hex characters');
  if (id.length === 0 || id.length > 200) throw new Error('an entry id is 1 to 200 characters');
  const bytes = Buffer.from(canonicalJson({ type: LOG_ENTRY_TYPE, kind, id, sha256 }), 'utf8');
  if (bytes.length > MAX_ENTRY_BYTES) throw new Error('an entry is at most 65535 bytes');
  return bytes;
}

/** The entry of a document: its kind, id, and the sha256 of its canonical JSON (or of the given bytes). */
export function entryFor(kind: LogEntryKind, id: string, document: unknown): Buffer {
  const bytes = document instanceof Uint8Array ? document : Buffer.from(canonicalJson(document), 'utf8');
  return logEntryBytes(kind, id, sha256Hex(bytes));
}

/**
 * Reads entry bytes as a compact statement; null when they are not one (a leaf of the older format,
 * or anything else). Only the exact canonical bytes count: a statement spelled another way is not one.
 */
export function parseLogEntry(bytes: Uint8Array): LogEntry | null {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    return null;
  }
  const e = value as Partial<LogEntry> | null;
  if (
    !e ||
    typeof e !== 'object' ||
    e.type !== LOG_ENTRY_TYPE ||
    typeof e.kind !== 'string' ||
    !(logEntryKinds as readonly string[]).includes(e.kind) ||
    typeof e.id !== 'string' ||
    typeof e.sha256 !== 'string' ||
    !HEX64.test(e.sha256) ||
    Object.keys(e).length !== 4
  )
    return null;
  const entry: LogEntry = { type: LOG_ENTRY_TYPE, kind: e.kind, id: e.id, sha256: e.sha256 };
  return Buffer.from(canonicalJson(entry), 'utf8').equals(Buffer.from(bytes)) ? entry : null;
}

/**
 * The key a leaf is stored under (unique in the log, so nothing is logged twice): a package's proof
 * id, as packages always were; `<kind>:<id>` for every other kind.
 */
export const leafKey = (kind: LogEntryKind, id: string): string =>
  kind.endsWith('_package') ? id : `${kind}:${id}`;
