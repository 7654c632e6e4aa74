// The circuits' phase-2 transcripts in the transparency log: one `ceremony_transcript` leaf per circuit
// and final zkey (id `<circuit>/<final zkey sha256>`), appended when a web process starts with keys the
// log has not seen, never twice; and what the transcript route serves: the transcript and its leaf.
import type { Knex } from 'knex';
import { entryFor, leafKey, parseLogEntry } from '../platform/translog/entry';
import { leafByKey, lockLog, loggedKeys } from '../platform/translog/pg-log';
import { appendEntries, logProofFor } from '../platform/translog/service-log';
import { loadManifest } from './artifacts';
import { readTranscript, transcriptLogId } from './ceremony';
import type { Transcript } from './ceremony';

const KIND = 'ceremony_transcript' as const;

const leafOf = (t: Transcript) => {
  const id = transcriptLogId(t);
  return { key: leafKey(KIND, id), entry: entryFor(KIND, id, t) };
};

/**
 * Appends the transcript of every circuit in the manifest that has one and is not logged yet, under
 * the log's lock in one transaction: a process starting beside another, or again, appends nothing twice.
 * Returns the ids appended.
 */
export async function logCeremonyTranscripts(db: Knex): Promise<string[]> {
  const transcripts = Object.keys(loadManifest().circuits)
    .map((circuit) => readTranscript(circuit))
    .filter((t): t is Transcript => t !== undefined);
  if (transcripts.length === 0) return [];
  const leaves = transcripts.map((t) => ({ id: transcriptLogId(t), ...leafOf(t) }));
  return db.transaction(async (trx) => {
    await lockLog(trx);
    const logged = await loggedKeys(
      trx,
      leaves.map((l) => l.key),
    );
    const fresh = leaves.filter((l) => !logged.has(l.key));
    if (fresh.length > 0) await appendEntries(trx, fresh);
    return fresh.map((l) => l.id);
  });
}

export interface LoggedTranscript {
  transcript: Transcript;
  /** The leaf that logs it, with its C2SP tlog proof; null while it is not logged. */
  log: { kind: typeof KIND; id: string; sha256: string; index: number; proof: string | null } | null;
}

/** A circuit's transcript and its log leaf; undefined when the circuit has no transcript. */
export async function loggedTranscript(db: Knex, circuit: string): Promise<LoggedTranscript | undefined> {
  if (!Object.hasOwn(loadManifest().circuits, circuit)) return undefined;
  let transcript: Transcript | undefined;
  try {
    transcript = readTranscript(circuit);
  } catch {
    return undefined; // a malformed file is no transcript (production refuses to start with one)
  }
  if (!transcript) return undefined;
  const { key, entry } = leafOf(transcript);
  const leaf = await leafByKey(db, key);
  const logged = leaf?.entry ? parseLogEntry(leaf.entry) : null;
  // A leaf under this key that logs other bytes is not this transcript's.
  if (!leaf || !logged || !Buffer.from(leaf.entry!).equals(entry)) return { transcript, log: null };
  const proof = await logProofFor(db, key, () => entry);
  return {
    transcript,
    log: {
      kind: KIND,
      id: logged.id,
      sha256: logged.sha256,
      index: leaf.index,
      proof: proof.status === 'proved' ? proof.proof : null,
    },
  };
}
