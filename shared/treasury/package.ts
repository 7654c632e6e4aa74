// The treasury request proof package: the request's terms, the m-of-n committee decisions and the audit
// chain, signed and logged. Pure: verification needs only the service's public key.
import { z } from 'zod';
import { canonicalJson } from '../platform/canonical';
import { sha256Hex } from '../platform/crypto';
import type { Signer } from '../platform/crypto';
import { chainGenesis, verifyChain } from '../proofs/chain';
import type { Trust } from '../platform/trust';
import { checkEnvelope, envelopeShape, signPackage } from '../proofs/envelope';
import type { Envelope, Reason } from '../proofs/envelope';
import { HEX64 } from '../proofs/records';
import { chainSchema } from '../proofs/records';
import type { ChainLink } from '../proofs/records';
import type { PackageChecker } from '../platform/translog/bundle';

const hex64 = z.string().regex(HEX64);
export const treasuryOperations = ['spend', 'mint', 'burn', 'transfer'] as const;
export type TreasuryOperation = (typeof treasuryOperations)[number];

export const treasuryGenesis = (requestId: string): string =>
  chainGenesis({ kind: 'treasury', subjectId: requestId, label: 'Treasury request' });

export const treasuryTermsSchema = z
  .object({
    requestId: z.string().max(100),
    roomId: z.string().max(100),
    committee: z.string().max(40),
    operation: z.enum(treasuryOperations),
    asset: z.string().max(40),
    amount: z.string().regex(/^[1-9]\d{0,77}$/),
    recipient: z.string().max(200),
    purposeHash: hex64,
    threshold: z.number().int().min(1),
    committeeSize: z.number().int().min(1),
  })
  .strict();
export type TreasuryTerms = z.infer<typeof treasuryTermsSchema>;

/** The hash every approver signs: the whole of the terms, so an approval cannot be moved to others. */
export const requestHash = (terms: TreasuryTerms): string =>
  sha256Hex(canonicalJson({ type: 'proof-exchange/treasury-request/v1', ...terms }));

const decisionSchema = z
  .object({ memberCommitment: hex64, decision: z.enum(['approve', 'reject']), at: z.iso.datetime() })
  .strict();

export const treasuryPackageSchema = z
  .object({
    ...envelopeShape,
    kind: z.literal('treasury'),
    subject: treasuryTermsSchema,
    requestHash: hex64,
    outcome: z.enum(['approved', 'rejected']),
    decisions: z.array(decisionSchema).max(1000),
    chain: chainSchema,
  })
  .strict()
  .meta({ id: 'TreasuryPackage' });
export type TreasuryPackage = z.infer<typeof treasuryPackageSchema> & Envelope;

export function buildTreasuryPackage(
  input: {
    proofId: string;
    issuedAt: Date;
    terms: TreasuryTerms;
    outcome: 'approved' | 'rejected';
    decisions: Array<z.infer<typeof decisionSchema>>;
    genesis: string;
    entries: readonly ChainLink[];
  },
  key: Signer,
): TreasuryPackage {
  const entries = [...input.entries];
  return signPackage<TreasuryPackage>(
    {
      version: 1,
      kind: 'treasury',
      proofId: input.proofId,
      issuedAt: input.issuedAt.toISOString(),
      subject: input.terms,
      requestHash: requestHash(input.terms),
      outcome: input.outcome,
      decisions: input.decisions,
      chain: {
        genesis: input.genesis,
        head: entries.length ? entries[entries.length - 1]!.entryHash : input.genesis,
        entries,
      },
    },
    key,
  );
}

export interface TreasuryVerdict {
  valid: boolean;
  signatureValid: boolean;
  inclusionValid?: boolean;
  chainValid: boolean;
  approvalsMet: boolean;
  reasons: Reason[];
}

/** Checks signature, log proof, chain, the terms' hash, and that the decisions justify the outcome. Never throws. */
export function verifyTreasuryPackage(
  input: unknown,
  trust: Trust,
  opts: { loggedAt?: string } = {},
): TreasuryVerdict {
  const parsed = treasuryPackageSchema.safeParse(input);
  if (!parsed.success)
    return {
      valid: false,
      signatureValid: false,
      chainValid: false,
      approvalsMet: false,
      reasons: [
        {
          check: 'format',
          code: 'malformed_package',
          detail: parsed.error.issues[0]?.message ?? 'malformed',
        },
      ],
    };
  const pkg = parsed.data as TreasuryPackage;
  const env = checkEnvelope(pkg, trust, opts);
  const reasons = [...env.reasons];
  const altered = (code: string, detail: string) => reasons.push({ check: 'notAltered', code, detail });

  let chainValid = pkg.chain.genesis === treasuryGenesis(pkg.subject.requestId);
  if (!chainValid) altered('wrong_genesis', 'The audit chain does not start at this request.');
  const chain = verifyChain(pkg.chain.genesis, pkg.chain.entries);
  if (!chain.ok) {
    chainValid = false;
    altered(chain.code, chain.detail);
  } else if (chain.head !== pkg.chain.head) {
    chainValid = false;
    altered('chain_head_mismatch', 'The chain head does not match its entries.');
  }
  if (requestHash(pkg.subject) !== pkg.requestHash) {
    chainValid = false;
    altered('terms_mismatch', 'The request hash does not match the terms.');
  }
  const created = pkg.chain.entries[0];
  if (!created || created.action !== 'created' || created.data?.requestHash !== pkg.requestHash) {
    chainValid = false;
    altered('terms_not_recorded', 'The chain did not record these terms at creation.');
  }
  const recorded = pkg.chain.entries
    .filter((e) => e.action === 'approve' || e.action === 'reject')
    .map((e) => ({ memberCommitment: e.actorCommitment, decision: e.action, at: e.at }));
  if (canonicalJson(recorded) !== canonicalJson(pkg.decisions)) {
    chainValid = false;
    altered('decisions_mismatch', 'The decisions are not the ones the chain recorded.');
  }
  const decided = pkg.chain.entries[pkg.chain.entries.length - 1];
  if (decided?.action !== 'decided' || decided.data?.outcome !== pkg.outcome) {
    chainValid = false;
    altered('outcome_not_recorded', 'The chain did not record this outcome.');
  }

  const distinct = new Set(pkg.decisions.map((d) => d.memberCommitment));
  const approvals = pkg.decisions.filter((d) => d.decision === 'approve').length;
  const rejections = pkg.decisions.length - approvals;
  const { threshold, committeeSize } = pkg.subject;
  const approvalsMet =
    distinct.size === pkg.decisions.length &&
    pkg.decisions.length <= committeeSize &&
    (pkg.outcome === 'approved' ? approvals >= threshold : rejections > committeeSize - threshold);
  if (!approvalsMet)
    reasons.push({
      check: 'approvalsMet',
      code: 'threshold_not_met',
      detail: `The decisions do not justify "${pkg.outcome}" under ${threshold} of ${committeeSize}.`,
    });
  return {
    valid:
      env.signatureValid &&
      env.inclusionValid !== false &&
      chainValid &&
      approvalsMet &&
      reasons.length === 0,
    signatureValid: env.signatureValid,
    ...(env.inclusionValid === undefined ? {} : { inclusionValid: env.inclusionValid }),
    chainValid,
    approvalsMet,
    reasons,
  };
}

/** The treasury verifier as a bundle's package check (shared/platform/translog/bundle.ts). */
export const checkTreasuryPackage: PackageChecker = async (pkg, keys) => {
  const v = verifyTreasuryPackage(pkg, keys);
  const outcome = (pkg as { outcome?: unknown } | null)?.outcome;
  return {
    valid: v.valid,
    summary: `treasury request ${String(outcome)}: chain ${v.chainValid ? 'intact' : 'broken'}, approvals ${v.approvalsMet ? 'met' : 'not met'}`,
    reasons: v.reasons.map((r) => `${r.check}: ${r.code}: ${r.detail}`),
  };
};
