// Every kind of proof this service issues shares the prf_ prefix: workflow, governance, auction and
// treasury packages and blind policy proofs. This finds which kind an id names (one query in each
// kind's table, side by side), checks a package of any kind under this service's trust root, and renders
// the verdict of a kind other than workflow (./index.ts renders workflows) — an insecure setup always
// as a warning, never as verified.
import type { Request } from 'express';
import type { Db } from '../../shared/platform/db/knex';
import { AppError } from '../../shared/platform/errors';
import { verifyAuctionPackage } from '../../shared/auctions/package';
import { verifyTreasuryPackage } from '../../shared/treasury/package';
import type { Reason } from '../../shared/proofs/envelope';
import { verifyUnderServiceTrust } from '../../shared/proofs/service-trust';
import { insecureSetup } from '../../shared/zk/setup';
import { verifyBlindPolicy } from '../../shared/zk/verify';
import { verifyGovernanceAsService } from '../offload/governance';
import { escapeHtml, yesNo } from './layout';

export type ProofKind = 'workflow' | 'governance' | 'auction' | 'treasury' | 'blind-policy';

export const kindLabel: Record<ProofKind, string> = {
  workflow: 'Proof workflow',
  governance: 'Governance vote',
  auction: 'Sealed auction',
  treasury: 'Treasury request',
  'blind-policy': 'Blind policy proof',
};

export interface ResolvedProof {
  kind: ProofKind;
  /** The public package, for kinds whose package anyone may read (governance, auction). */
  package?: unknown;
  /** Where the subject's own public page is, when it has one. */
  page?: { href: string; label: string };
}

/** Which kind of proof an id names, looked up in every kind's table at once; undefined when none. */
export async function resolveProofId(db: Db, id: string): Promise<ResolvedProof | undefined> {
  const [workflow, proposal, auction, treasury, policy] = await Promise.all([
    db('workflows').where('proof_id', id).first('id'),
    db('proposals')
      .where('tally_proof_id', id)
      .orWhere('final_proof_id', id)
      .first('id', 'tally_proof_id', 'tally_package', 'final_package'),
    db('auctions').where('proof_id', id).first('id', 'package'),
    db('treasury_requests').where('proof_id', id).first('id'),
    db('proofs').where('id', id).first('id'),
  ]);
  if (workflow) return { kind: 'workflow' };
  if (proposal)
    return {
      kind: 'governance',
      package: proposal.tally_proof_id === id ? proposal.tally_package : proposal.final_package,
      page: { href: `/governance/proposals/${proposal.id}/`, label: `Proposal ${proposal.id}` },
    };
  if (auction)
    return {
      kind: 'auction',
      package: auction.package,
      page: { href: `/auctions/${auction.id}/`, label: `Auction ${auction.id}` },
    };
  // A treasury package is its owner's alone and a blind policy proof its holder's: the id says which
  // kind it is, nothing more.
  if (treasury) return { kind: 'treasury' };
  if (policy) return { kind: 'blind-policy' };
  return undefined;
}

/** The kind a pasted document claims: a package's `kind`, or a blind policy proof's shape. */
export function claimedKind(doc: unknown): ProofKind | undefined {
  const d = doc as { kind?: unknown; policy?: unknown; proof?: unknown; publicSignals?: unknown } | null;
  if (!d || typeof d !== 'object') return undefined;
  if (d.kind === 'workflow' || d.kind === 'governance' || d.kind === 'auction' || d.kind === 'treasury')
    return d.kind;
  if (typeof d.policy === 'string' && d.proof !== undefined && Array.isArray(d.publicSignals))
    return 'blind-policy';
  return undefined;
}

/** A verdict of a kind other than workflow: every check, each a fact with its label. */
export interface KindVerdict {
  kind: Exclude<ProofKind, 'workflow'>;
  valid: boolean;
  /** The proofs it rests on are Groth16 proofs under keys from a development setup: forgeable. */
  insecure: boolean;
  facts: Array<[string, boolean | undefined]>;
  reasons: Array<Pick<Reason, 'code' | 'detail'> & { check: string }>;
  package?: unknown;
  proofId?: string;
}

/** Checks a package (or a blind policy proof) of a kind other than workflow under this service's trust. */
export async function verifyOfKind(
  db: Db,
  kind: Exclude<ProofKind, 'workflow'>,
  doc: unknown,
  caller: { req: Request },
): Promise<KindVerdict> {
  const proofId = (doc as { proofId?: unknown } | null)?.proofId;
  const base = { kind, package: doc, ...(typeof proofId === 'string' ? { proofId } : {}) };
  if (kind === 'governance') {
    // The signature first; the trustees' arithmetic and the ballots in the verify pool, once.
    const { verdict: v } = await verifyGovernanceAsService(db, doc, caller);
    // Anonymous ballots are membership proofs: as strong as the keys they were made with.
    const zk = (doc as { scheme?: unknown } | null)?.scheme !== undefined;
    return {
      ...base,
      valid: v.valid,
      insecure: zk && insecureSetup(),
      facts: [
        ['Signature valid', v.signatureValid],
        ['In the transparency log', v.inclusionValid],
        ['Every ballot proves membership and opens to its vote', v.ballotsValid],
        ['Tally recomputed from the ballots', v.tallyValid],
        ['Review approvals met before the vote', v.reviewMet],
        ['Audit chain intact', v.chainValid],
      ],
      reasons: v.reasons,
    };
  }
  if (kind === 'auction') {
    const v = await verifyUnderServiceTrust(db, doc, (trust, opts) => verifyAuctionPackage(doc, trust, opts));
    return {
      ...base,
      valid: v.valid,
      insecure: false,
      facts: [
        ['Signature valid', v.signatureValid],
        ['In the transparency log', v.inclusionValid],
        ['Every reveal opens its commitment', v.revealsValid],
        ['Merkle roots recomputed', v.rootsValid],
        ['Outcome follows the stated rules', v.outcomeValid],
      ],
      reasons: v.reasons,
    };
  }
  if (kind === 'treasury') {
    const v = await verifyUnderServiceTrust(db, doc, (trust, opts) =>
      verifyTreasuryPackage(doc, trust, opts),
    );
    return {
      ...base,
      valid: v.valid,
      insecure: false,
      facts: [
        ['Signature valid', v.signatureValid],
        ['In the transparency log', v.inclusionValid],
        ['Audit chain intact', v.chainValid],
        ['Required approvals met', v.approvalsMet],
      ],
      reasons: v.reasons,
    };
  }
  const d = doc as { policy: string; proof: unknown; publicSignals: unknown };
  try {
    const v = await verifyBlindPolicy(d.policy, d.proof, d.publicSignals);
    return {
      kind,
      valid: v.valid,
      insecure: v.insecureSetup,
      facts: [[`Proof verifies against the ${d.policy} policy’s verification key`, v.valid]],
      reasons: v.valid
        ? []
        : [{ check: 'proof', code: String(v.reason), detail: 'The proof does not hold.' }],
    };
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err;
    return {
      kind,
      valid: false,
      insecure: false,
      facts: [['Proof verifies against the policy’s verification key', false]],
      reasons: [{ check: 'format', code: err.code, detail: err.message }],
    };
  }
}

/** The one answer first: verified; checks hold under an insecure setup (a warning); or not verified. */
export type KindVerdictLabel = 'verified' | 'insecure' | 'not-verified';

export const verdictLabelOf = (v: Pick<KindVerdict, 'valid' | 'insecure'>): KindVerdictLabel =>
  !v.valid ? 'not-verified' : v.insecure ? 'insecure' : 'verified';

export const INSECURE_LABEL = 'Checks hold, but under an insecure setup';
export const INSECURE_TEXT =
  'Every check held, but the zero-knowledge keys these proofs rest on come from a development setup, not a published ceremony: whoever made that setup could forge them. Treat this as a test, not as proof.';

const kindText: Record<KindVerdictLabel, [string, string]> = {
  verified: [
    'Verified',
    "Every check held: the package is signed with a key of this service's trust root that was valid when it signed, included in its transparency log, and its contents recompute.",
  ],
  insecure: [INSECURE_LABEL, INSECURE_TEXT],
  'not-verified': [
    'Not verified',
    'At least one check failed; the reasons below say which and why. Do not rely on it.',
  ],
};

export const kindBadge = (kind: ProofKind): string =>
  `<p>Kind: <span class="kind" id="kind" data-kind="${escapeHtml(kind)}">${escapeHtml(kindLabel[kind])}</span></p>`;

/** The result page of a governance, auction, treasury or blind policy verification. */
export function kindResultPage(v: KindVerdict, another: string, page?: ResolvedProof['page']): string {
  const label = verdictLabelOf(v);
  const [title, text] = kindText[label];
  const heading = v.proofId ? `Proof <span class="hash">${escapeHtml(v.proofId)}</span>` : kindLabel[v.kind];
  const facts = v.facts
    .map(([name, ok]) => `<tr><th scope="row">${escapeHtml(name)}</th><td>${yesNo(ok)}</td></tr>`)
    .join('');
  const reasons = v.reasons.length
    ? `<h2>Why</h2><ul class="reasons">${v.reasons
        .map(
          (r) =>
            `<li><code>${escapeHtml(r.check)}</code> — <code>${escapeHtml(r.code)}</code>: ${escapeHtml(r.detail)}</li>`,
        )
        .join('')}</ul>`
    : '';
  const link = page
    ? `<p>Its public page: <a href="${escapeHtml(page.href)}">${escapeHtml(page.label)}</a></p>`
    : '';
  const pkg =
    v.package !== undefined && v.kind !== 'blind-policy'
      ? `<details><summary>Proof package (JSON, verifiable offline)</summary><pre class="hash">${escapeHtml(JSON.stringify(v.package, null, 2))}</pre></details>`
      : '';
  return `<h1>${heading}</h1>${kindBadge(v.kind)}${link}
<section class="verdict ${label}" id="verdict" data-verdict="${label}" role="status"><p class="label">${escapeHtml(title)}</p><p>${escapeHtml(text)}</p></section>
<h2>Checks</h2><table id="facts"><tbody>${facts}</tbody></table>${reasons}${pkg}
${another}`;
}

/** By id, a kind whose proof is not public: what it is, and how its holder verifies it here. */
export function privateKindPage(id: string, kind: 'treasury' | 'blind-policy', another: string): string {
  const how =
    kind === 'treasury'
      ? 'A treasury package is its owner’s alone: this service does not show it by its id. Its owner can paste the package (or its offline bundle) on this page to verify it.'
      : 'A blind policy proof is its holder’s: this service does not show it by its id. Its holder can paste the proof (<code>{"policy", "proof", "publicSignals"}</code>) on this page to verify it.';
  return `<h1>Proof <span class="hash">${escapeHtml(id)}</span></h1>${kindBadge(kind)}
<section class="verdict pending" id="verdict" data-verdict="not-public" role="status"><p class="label">Not public</p><p>${how}</p></section>
${another}`;
}
