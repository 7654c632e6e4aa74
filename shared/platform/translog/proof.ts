// C2SP tlog proofs (c2sp.org/tlog-proof): an entry's index, its inclusion proof and the (cosigned)
// checkpoint it is proven against, as one text a verifier checks offline; `extra` carries the entry
// itself. Pure.
import { parseCheckpoint } from './checkpoint';
import type { SignedCheckpoint } from './checkpoint';

export const TLOG_PROOF_HEADER = 'c2sp.org/tlog-proof@v1';

export interface TlogProof {
  /** Opaque bytes the application needs to rebuild the leaf (here: the log entry). */
  extra: Buffer | null;
  index: number;
  /** Sibling hashes from the leaf up. */
  path: Buffer[];
  /** The checkpoint note, verbatim. */
  checkpoint: string;
}

export function formatTlogProof(p: TlogProof): string {
  const lines = [TLOG_PROOF_HEADER];
  if (p.extra) lines.push(`extra ${p.extra.toString('base64')}`);
  lines.push(`index ${p.index}`);
  for (const h of p.path) lines.push(h.toString('base64'));
  return `${lines.join('\n')}\n\n${p.checkpoint}`;
}

/** Parses a tlog proof; throws on a malformed one. The checkpoint is parsed too (not verified). */
export function parseTlogProof(text: string): TlogProof & { parsed: SignedCheckpoint } {
  const split = text.indexOf('\n\n');
  if (split < 0) throw new Error('a tlog proof has a blank line before its checkpoint');
  const lines = text.slice(0, split).split('\n');
  if (lines.shift() !== TLOG_PROOF_HEADER) throw new Error(`a tlog proof starts with ${TLOG_PROOF_HEADER}`);
  let extra: Buffer | null = null;
  if (lines[0]?.startsWith('extra ')) {
    const b64 = lines.shift()!.slice(6);
    extra = Buffer.from(b64, 'base64');
    if (extra.toString('base64') !== b64) throw new Error('extra is base64');
  }
  const indexLine = lines.shift();
  const m = /^index (0|[1-9][0-9]{0,15})$/.exec(indexLine ?? '');
  if (!m || !Number.isSafeInteger(Number(m[1]))) throw new Error('a tlog proof names its index');
  if (lines.length > 63) throw new Error('an inclusion proof has at most 63 hashes');
  const path = lines.map((l) => {
    const h = Buffer.from(l, 'base64');
    if (h.length !== 32 || h.toString('base64') !== l) throw new Error('a proof line is base64 of 32 bytes');
    return h;
  });
  const checkpoint = text.slice(split + 2);
  return { extra, index: Number(m[1]), path, checkpoint, parsed: parseCheckpoint(checkpoint) };
}
