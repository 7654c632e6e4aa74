// The audit entries of proposals and treasury requests as packages publish them. Pure: no configuration.
import { z } from 'zod';

/** One audit entry; `data` holds only hashes, counts and public facts, never a choice before the close. */
export interface EntryBody {
  seq: number;
  stage: string;
  action: string;
  at: string;
  actorCommitment: string | null;
  data: Record<string, string | number | boolean | null> | null;
}

export type ChainLink = EntryBody & { prevHash: string; entryHash: string };

/** A sha256 digest or commitment as packages publish it: 64 lowercase hex characters. */
export const HEX64 = /^[0-9a-f]{64}$/;

const hex64 = z.string().regex(HEX64);
export const chainLinkSchema = z
  .object({
    seq: z.number().int().min(0),
    stage: z.string().max(40),
    action: z.string().max(40),
    at: z.iso.datetime(),
    actorCommitment: hex64.nullable(),
    data: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).nullable(),
    prevHash: hex64,
    entryHash: hex64,
  })
  .strict();

export const chainSchema = z
  .object({ genesis: hex64, head: hex64, entries: z.array(chainLinkSchema).max(10_000) })
  .strict();
