// A governance vote's count and its ballots' Merkle root, as the close computes them and a verifier
// recomputes them from a package. Pure: no configuration.
import { canonicalJson } from '../platform/canonical';
import { sha256Hex } from '../platform/crypto';
import { fromHex, leafHash, rootHash, toHex } from '../platform/translog/merkle';
import { ciphertextDigest } from './ballot-protocol';

export interface Tally {
  counts: Record<string, number>;
  /** Ballots counted (spoiled ones not included). */
  total: number;
  /** Ballots whose vote did not open to one of the options (anonymous scheme only). */
  spoiled?: number;
  /** The option with the most ballots; 'tie', 'no_quorum' or 'no_ballots' when none wins. */
  outcome: string;
  winner: string | null;
}

/**
 * Plurality: one option with strictly the most ballots wins, when at least `quorum` ballots were cast.
 * A `null` choice is a spoiled ballot: reported, counted toward nothing (the anonymous scheme passes
 * `spoiled`; the first scheme had none and its tallies carry no such member).
 */
export function tallyBallots(
  options: readonly string[],
  choices: ReadonlyArray<string | null>,
  quorum: number,
  withSpoiled = false,
): Tally {
  const counts = Object.fromEntries(options.map((o) => [o, 0])) as Record<string, number>;
  let total = 0;
  for (const c of choices)
    if (c !== null && c in counts) {
      counts[c] = (counts[c] ?? 0) + 1;
      total += 1;
    }
  const spoiled = withSpoiled ? { spoiled: choices.length - total } : {};
  if (total === 0) return { counts, total, ...spoiled, outcome: 'no_ballots', winner: null };
  if (total < quorum) return { counts, total, ...spoiled, outcome: 'no_quorum', winner: null };
  const top = Math.max(...Object.values(counts));
  const leaders = options.filter((o) => counts[o] === top);
  if (leaders.length !== 1) return { counts, total, ...spoiled, outcome: 'tie', winner: null };
  return { counts, total, ...spoiled, outcome: 'passed', winner: leaders[0]! };
}

export const tallyHash = (tally: Tally): string =>
  sha256Hex(canonicalJson({ type: 'proof-exchange/tally/v1', ...tally }));

// --- Ballots as published

/** An anonymous ballot after the close: what was cast, and the vote it opens to (null: spoiled). */
export interface PublishedBallot {
  nullifier: string;
  root: string;
  ciphertext: string;
  proof: { pi_a: string[]; pi_b: string[][]; pi_c: string[] };
  choice: string | null;
}

/** A ballot's leaf in `ballotsRoot`: its nullifier and the digest of its ciphertext. */
const ballotLeafData = (nullifier: string, digest: string): Buffer =>
  Buffer.from(canonicalJson([nullifier, digest]), 'utf8');

export const anonymousLeaves = (ballots: ReadonlyArray<{ nullifier: string; ciphertext: string }>) =>
  ballots.map((b) =>
    leafHash(ballotLeafData(b.nullifier, ciphertextDigest(Buffer.from(b.ciphertext, 'base64url')))),
  );

const legacyLeaves = (commitments: readonly string[]) => commitments.map((c) => leafHash(fromHex(c)));

/** Canonical order of anonymous ballots: by nullifier, as a number. Says nothing of arrival. */
export const byNullifier = (a: { nullifier: string }, b: { nullifier: string }): number => {
  const x = BigInt(a.nullifier);
  const y = BigInt(b.nullifier);
  return x < y ? -1 : x > y ? 1 : 0;
};

/** RFC 6962 root over the ballots in package order (anonymous ballots, or the first scheme's commitments). */
export function ballotsRoot(
  ballots: ReadonlyArray<{ nullifier: string; ciphertext: string }> | readonly string[],
): string {
  const leaves =
    ballots.length && typeof ballots[0] === 'string'
      ? legacyLeaves(ballots as readonly string[])
      : anonymousLeaves(ballots as ReadonlyArray<{ nullifier: string; ciphertext: string }>);
  return toHex(rootHash(leaves, leaves.length));
}
