// A proposal as its row holds it, and what every step of its life reads from the row: the row locked
// for the step's transaction, its ballot key, the time left in a window.
import type { Knex } from 'knex';
import { notFound } from '../platform/errors';
import { ballotPublicKey } from './ballot-protocol';
import type { GovernancePackage } from './package';
import { proposalBallotKey } from './ballot-key';

export type ProposalStatus = 'review' | 'voting' | 'decrypting' | 'closed' | 'executed' | 'rejected';

/** Who can open the ballots: the service's own key (opened at the close), or the room's trustees (t of n). */
export type BallotScheme = 'service' | 'threshold';

export interface ProposalRow {
  id: string;
  room_id: string;
  title: string;
  description_hash: string | null;
  options: string[];
  review_committee: string;
  quorum: number;
  status: ProposalStatus;
  outcome: string | null;
  voting_ends_at: Date | null;
  voting_seconds: number | null;
  voting_opened_at: string | null;
  created_at_iso: string;
  /** The service-held ballot key, sealed; null under the trustees' scheme (the service holds none). */
  key_wrapped: Buffer | null;
  /** Set at creation since anonymous ballots; derived from key_wrapped for older proposals. */
  ballot_public_key: string | null;
  ballot_scheme: BallotScheme;
  chain_genesis: string;
  chain_head: string;
  entry_count: number;
  tally_proof_id: string | null;
  tally_package: GovernancePackage | null;
  final_proof_id: string | null;
  final_package: GovernancePackage | null;
  owner: string;
}

export const iso = (d: Date) => d.toISOString();

export async function lockProposal(trx: Knex.Transaction, id: string): Promise<ProposalRow> {
  const row = (await trx('proposals').where('id', id).forUpdate().first()) as ProposalRow | undefined;
  if (!row) throw notFound('The proposal');
  return row;
}

export const secondsLeft = (endsAt: Date, now: Date) =>
  Math.max(0, Math.ceil((endsAt.getTime() - now.getTime()) / 1000));

/** The proposal's ballot public key (base64url: X25519, or the trustees' ristretto255 joint key). */
export function publicKeyOf(p: ProposalRow): string {
  return (
    p.ballot_public_key ?? ballotPublicKey(proposalBallotKey(p.id, p.key_wrapped!)).toString('base64url')
  );
}
