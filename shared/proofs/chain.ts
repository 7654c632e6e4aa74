// The audit hash chain every package kind publishes: entryHash = sha256(prevHash ‖ canonicalJson(entry)),
// from a genesis bound to the chain's subject, with the recomputation that finds the first altered link.
import { createHash } from 'node:crypto';
import { canonicalJson } from '../platform/canonical';
import { sha256Hex } from '../platform/crypto';

/** Binds a chain to its subject, so entries cannot be replayed into another subject's chain. */
export interface ChainSubject {
  kind: string;
  /** The public id of the subject (a proof id). */
  subjectId: string;
  /** What the subject is, e.g. the template name. */
  label: string;
}

export function chainGenesis(subject: ChainSubject): string {
  return sha256Hex(
    canonicalJson({
      type: 'proof-exchange/chain/v1',
      kind: subject.kind,
      subjectId: subject.subjectId,
      label: subject.label,
    }),
  );
}

/** sha256(prevHash bytes ‖ canonical JSON bytes of the entry), hex. */
export function entryHash(prevHash: string, entry: object): string {
  return createHash('sha256')
    .update(Buffer.from(prevHash, 'hex'))
    .update(canonicalJson(entry), 'utf8')
    .digest('hex');
}

export function chainEntry<E extends object>(
  prevHash: string,
  entry: E,
): E & { prevHash: string; entryHash: string } {
  return { ...entry, prevHash, entryHash: entryHash(prevHash, entry) };
}

/** The hashed part of a chained entry: everything but the link fields. */
export function entryBody<E extends { prevHash: string; entryHash: string }>(
  link: E,
): Omit<E, 'prevHash' | 'entryHash'> {
  const { prevHash: _p, entryHash: _e, ...body } = link;
  return body;
}

export type ChainCheck =
  | { ok: true; head: string; length: number }
  | { ok: false; index: number; code: 'chain_broken' | 'entry_hash_mismatch'; detail: string };

/** Recomputes a chain from its genesis; reports the first link that does not hold. */
export function verifyChain(
  genesis: string,
  links: readonly { prevHash: string; entryHash: string }[],
): ChainCheck {
  let prev = genesis;
  for (const [index, link] of links.entries()) {
    if (link.prevHash !== prev) {
      return {
        ok: false,
        index,
        code: 'chain_broken',
        detail: `entry ${index} does not follow the entry before it`,
      };
    }
    if (entryHash(prev, entryBody(link)) !== link.entryHash) {
      return {
        ok: false,
        index,
        code: 'entry_hash_mismatch',
        detail: `entry ${index} was changed after it was recorded`,
      };
    }
    prev = link.entryHash;
  }
  return { ok: true, head: prev, length: links.length };
}
