// Public, server-rendered verification pages: a form for a proof id or a pasted package or bundle, and a
// result page that leads with one verdict — verified, not verified, in progress, or cannot tell (what was
// pasted is not a package) — then the public facts only. Plain HTML forms: no JavaScript needed.
import { guardInput } from '../http/input-guard';
import express from 'express';
import type { Request, Response } from 'express';
import { idPattern } from '../../shared/platform/ids';
import { logger } from '../../shared/platform/log';
import { AppError } from '../../shared/platform/errors';
import { BUNDLE_FORMAT, verifyBundle } from '../../shared/platform/translog/bundle';
import type { BundleVerdict } from '../../shared/platform/translog/bundle';
import { trustRootDocument } from '../../shared/platform/key-history';
import { LOG_PATH } from '../../shared/platform/translog/service-log';
import { verifyGivenPackage, verifyStored } from '../../shared/workflows/verify';
import type { Verification } from '../../shared/workflows/verify';
import type { AppDeps } from '../deps';
import { origin } from '../http/links';
import { packageCheckers } from '../wiring';
import { pooledGovernanceChecker } from '../offload/governance';
import { homePage } from './home';
import {
  INSECURE_LABEL,
  INSECURE_TEXT,
  claimedKind,
  kindBadge,
  kindLabel,
  kindResultPage,
  privateKindPage,
  resolveProofId,
  verifyOfKind,
} from './proofs';
import { insecureSetup } from '../../shared/zk/setup';
import { loadManifest } from '../../shared/zk/artifacts';
import { loadVerificationKey } from '../../shared/zk/verify';
import { assetsRouter, escapeHtml, sendPage, yesNo } from './layout';

export { escapeHtml };

const BASE = '/proof-workflows/verify';
const PROOF_ID = idPattern('prf');
const EXAMPLE_ID = 'prf_01jd3zq8y4v6e8k2m0n5p7r9st';
const ID_FORMAT = `<code>prf_</code> followed by 26 letters and digits, for example <code>${EXAMPLE_ID}</code>`;
/** A pasted package can be larger than an API body; still bounded. */
const PASTE_LIMIT_BYTES = 1024 * 1024;

function send(res: Response, status: number, title: string, body: string): void {
  sendPage(res, status, title, body, { current: `${BASE}/` });
}

function idForm(value = ''): string {
  return `<form method="get" action="${BASE}/" id="by-id">
<label for="proofId">Proof id</label>
<div class="field"><input type="text" id="proofId" name="proofId" value="${escapeHtml(value)}" placeholder="prf_…" required pattern="prf_[0-9a-hjkmnp-tv-z]{26}" title="prf_ followed by 26 letters and digits" autocomplete="off" spellcheck="false" aria-describedby="proofId-hint"><button type="submit">Verify</button></div>
<p class="hint" id="proofId-hint">The id the proof's owner shared with you — a workflow, a governance vote, a sealed auction, a treasury request or a blind policy proof: ${ID_FORMAT}.</p>
</form>`;
}

function formPage(error?: string, value?: string): string {
  return `<h1>Verify a proof</h1>
<p class="lead">Check any proof this service issued — a workflow, a governance vote, a sealed auction, a treasury request or a blind policy proof — without seeing any of its private data. The page says which kind it is.</p>
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}
${idForm(value)}
<p class="or">Or check a proof package of any kind, an offline bundle, or a blind policy proof, exactly as it was given to you:</p>
<form method="post" action="${BASE}/" id="by-package">
<label for="package">Proof package, bundle or blind policy proof (JSON)</label>
<textarea id="package" name="package" required spellcheck="false" aria-describedby="package-hint"></textarea>
<p class="hint" id="package-hint">A package is checked against this service's trust root (every key it has signed with, and when each was valid) and its transparency log; a bundle (<code>${BUNDLE_FORMAT}</code>) against the same trust root, as <code>npm run verify</code> checks it offline. Nothing you paste is stored.</p>
<button type="submit">Verify</button>
</form>`;
}

export type Verdict = 'verified' | 'insecure' | 'not-verified' | 'in-progress' | 'pending' | 'cannot-tell';

/**
 * The one answer a reader wants first, from the detailed verification. `pasted` is the document a
 * visitor pasted: one that does not even claim to be a workflow package says nothing either way, while
 * a workflow package that no longer parses was broken, so it fails.
 */
/**
 * Whether a workflow's verdict rests on Groth16 proofs — proven approvals (membership proofs) or a
 * blind policy proof as a stage's evidence — which keys from a development setup could forge.
 */
function restsOnZk(v: Verification, pasted?: unknown): boolean {
  if (v.approvals === 'proven') return true;
  const requirements =
    v.package?.requirements ?? (pasted as { requirements?: unknown } | null | undefined)?.requirements;
  return (
    Array.isArray(requirements) &&
    requirements.some(
      (r) => (r as { requiresBlindPolicyProof?: unknown } | null)?.requiresBlindPolicyProof === true,
    )
  );
}

export function verdictOf(v: Verification, pasted?: unknown): Verdict {
  const claimsWorkflow = (pasted as { kind?: unknown } | null)?.kind === 'workflow';
  if (pasted !== undefined && !claimsWorkflow && v.reasons.some((r) => r.check === 'format'))
    return 'cannot-tell';
  const facts = v.existed && v.completed && v.approvalsMet && v.sequenceRespected && v.notAltered;
  if (facts && v.signatureValid === true && v.inclusionValid !== false)
    return restsOnZk(v, pasted) && insecureSetup() ? 'insecure' : 'verified';
  if (facts && v.signatureValid === undefined && v.packageStatus === 'pending') return 'pending';
  // Still running, intact, and every unmet fact only not met yet (no rule broken, nothing altered).
  const onlyNotYet = v.reasons.every((r) => r.code === `not_${r.check}`);
  if (v.status === 'active' && v.notAltered && onlyNotYet) return 'in-progress';
  return 'not-verified';
}

const verdictText: Record<Verdict, [string, string]> = {
  verified: [
    'Verified',
    "This workflow existed, completed, met its required approvals and its required sequence, and no record was altered. Its proof package is signed with a key of this service's trust root that was valid when it signed, and included in its transparency log.",
  ],
  insecure: [INSECURE_LABEL, INSECURE_TEXT],
  'not-verified': [
    'Not verified',
    "At least one check failed; the reasons below say which and why. Do not rely on this workflow's outcome.",
  ],
  'in-progress': [
    'In progress',
    'This workflow has started and no record was altered, but it has not completed yet. Its proof package is signed and logged when it does: check again then.',
  ],
  pending: [
    'Checked; package on its way',
    'The records check out. The signed proof package is being built and logged: reload in a moment.',
  ],
  'cannot-tell': [
    'Cannot tell',
    'What was pasted is not a proof package of any kind this service issues, so it says nothing, good or bad.',
  ],
};

/** Under a verified verdict whose approvals are bare commitments: what the verdict does not cover. */
const assertedNote =
  '<p class="caveat">Its approvals are asserted, not proven: they are commitments the organization recorded, not membership proofs of an approver set, so they show that approvals were recorded, not who or whether they were real.</p>';

function verdictBlock(verdict: Verdict, extra = ''): string {
  const [label, text] = verdictText[verdict];
  return `<section class="verdict ${verdict}" id="verdict" data-verdict="${verdict}" role="status"><p class="label">${escapeHtml(label)}</p><p>${escapeHtml(text)}</p>${extra}</section>`;
}

/** What the approvals row says when they are only asserted: recorded, never "happened". */
const assertedLabel = 'Required approvals recorded (asserted by the organization, not proven)';

const factRows: Array<[keyof Verification, string]> = [
  ['existed', 'Existed'],
  ['completed', 'Completed'],
  ['approvalsMet', 'Required approvals happened'],
  ['sequenceRespected', 'Required sequence respected'],
  ['notAltered', 'No record was altered'],
];

/**
 * Whether the approvals are proven (membership proofs of the stages' approver sets) or only asserted
 * (bare actor commitments, which anyone holding the owner's key could invent): never shown as proven
 * unless every counted approval is a valid proof.
 */
const approvalsText = {
  proven: 'proven: each is a membership proof of its stage’s approver set',
  asserted: 'asserted, not proven',
  none: 'none recorded',
} as const;

const approvalsRow = (a: keyof typeof approvalsText): string =>
  `<tr><th scope="row">Approvals</th><td data-fact="approvals" data-approvals="${escapeHtml(a)}">${escapeHtml(approvalsText[a])}</td></tr>`;

const another = `<p><a href="${BASE}/">Verify another proof</a></p>`;

function cannotTellPage(v: Verification): string {
  const why = v.reasons
    .filter((r) => r.check === 'format')
    .map((r) => `<p><code>${escapeHtml(r.code)}</code>: ${escapeHtml(r.detail)}</p>`)
    .join('');
  return `<h1>Proof package</h1>${verdictBlock('cannot-tell', why)}
<p>A proof package is the JSON document shown under “Proof package” on a proof's page (a workflow, a governance vote, an auction, a treasury request); a blind policy proof is <code>{"policy", "proof", "publicSignals"}</code>. To check a proof by its id instead, enter ${ID_FORMAT}.</p>
${another}`;
}

function resultPage(v: Verification, pasted?: unknown): string {
  const verdict = verdictOf(v, pasted);
  if (verdict === 'cannot-tell') return cannotTellPage(v);
  // While a workflow runs, an unmet fact is not a failure: it is not yet.
  const inProgress = verdict === 'in-progress';
  const facts = factRows
    .map(
      ([k, label]) =>
        `<tr><th scope="row">${escapeHtml(k === 'approvalsMet' && v.approvals === 'asserted' ? assertedLabel : label)}</th><td data-fact="${escapeHtml(k)}">${
          inProgress && !v[k] ? '<span class="na">not yet</span>' : yesNo(v[k] as boolean)
        }</td></tr>`,
    )
    .join('')
    .concat(v.approvals ? approvalsRow(v.approvals) : '');
  const reasons =
    v.reasons.length && !inProgress
      ? `<h2>Why</h2><ul class="reasons">${v.reasons
          .map(
            (r) =>
              `<li><code>${escapeHtml(r.check)}</code> — <code>${escapeHtml(r.code)}</code>${r.stage ? ` (stage <code>${escapeHtml(r.stage)}</code>)` : ''}: ${escapeHtml(r.detail)}</li>`,
          )
          .join('')}</ul>`
      : '';
  const stages = v.stages ?? v.package?.stages ?? [];
  const timeline = stages.length
    ? `<h2>Stage timeline</h2><div class="table-wrap"><table id="stages" class="stack"><thead><tr><th>Stage</th><th>Status</th><th>Time</th><th>Proof hash</th><th>Actor commitment</th></tr></thead><tbody>${stages
        .map(
          (s) =>
            `<tr data-stage="${escapeHtml(s.key)}"><td data-label="Stage">${escapeHtml(s.name)}</td><td data-label="Status">${escapeHtml(s.status)}${
              s.approvals ? ` (${escapeHtml(s.approvals)} approval${s.approvals === 1 ? '' : 's'})` : ''
            }</td><td class="time" data-label="Time">${escapeHtml(s.timestamp ?? '—')}</td><td class="hash" data-label="Proof hash">${escapeHtml(s.proofHash ?? '—')}</td><td class="hash" data-label="Actor commitment">${
              s.actorCommitments.length
                ? s.actorCommitments.map(escapeHtml).join('<br>')
                : escapeHtml(s.actorCommitment ?? '—')
            }</td></tr>`,
        )
        .join('')}</tbody></table></div>`
    : '';
  const fixed = v.approverSets ?? [];
  const approverSets = fixed.length
    ? `<h2>Approver sets</h2><p>Fixed when the workflow was prepared, at <span class="time">${escapeHtml(
        fixed[0]!.fixedAt,
      )}</span>, before its first event: its approvals count only against these roots, and members added to a set later never count.</p><div class="table-wrap"><table id="approver-sets"><thead><tr><th>Stage</th><th>Members then</th><th>Each approver holds</th><th>Root</th></tr></thead><tbody>${fixed
        .map(
          (f) =>
            `<tr data-stage="${escapeHtml(f.stage)}"><td>${escapeHtml(f.stage)}</td><td data-size="${escapeHtml(f.size)}">${escapeHtml(f.size)}</td><td class="held">${
              f.credential
                ? `${escapeHtml(f.credential.what)} showing ${escapeHtml(f.credential.query)}${
                    f.credential.issuers.length ? `, from ${escapeHtml(f.credential.issuers.join(', '))}` : ''
                  }, proven inside each approval`
                : 'no credential required'
            }</td><td>root ${escapeHtml(f.rootSeq)} of set <code>${escapeHtml(f.setId)}</code></td></tr>`,
        )
        .join('')}</tbody></table></div>`
    : '';
  const credentials = v.credentials?.length
    ? `<h2>Credentials</h2><ul id="credentials">${v.credentials
        .map(
          (c) =>
            `<li data-stage="${escapeHtml(c.stage)}" data-proven="${c.proven}">${escapeHtml(
              `At stage ${c.stage}: ${c.what} signed by ${c.issuer.name} (key ${c.issuer.keyId.slice(0, 12)}…, accepted from ${c.issuer.acceptedSince}) for this application's applicant shows: ${c.terms.join('; ')}; not revoked as of ${c.revocationPublishedAt}; not expired at ${c.at}. `,
            )}${c.proven ? '<span class="yes">Proven.</span>' : `<span class="no">Not proven:</span> ${escapeHtml(c.reasons.join('; '))}`}</li>`,
        )
        .join('')}</ul>`
    : '';
  const chain = v.chain ?? v.package?.chain;
  const pkg = v.package;
  const chainBlock = chain
    ? `<h2>Audit chain</h2><p>Chain head <span class="hash" id="chain-head">${escapeHtml(chain.head)}</span> after ${escapeHtml(
        chain.length,
      )} entries.</p>`
    : '';
  const signature = pkg
    ? `<h2>Signature</h2><p>Signed by key <code>${escapeHtml(pkg.issuer.keyId)}</code> (ed25519; each key's period is in the service's <a href="/api/proof-workflows/trust-root">trust root</a>): ${yesNo(v.signatureValid)}</p><p class="hash">${escapeHtml(
        pkg.signature,
      )}</p>`
    : v.packageStatus && v.packageStatus !== 'none'
      ? `<h2>Signature</h2><p>The proof package is ${escapeHtml(v.packageStatus)}.</p>`
      : '';
  const log = pkg?.log
    ? `<h2>Transparency log</h2><p>Included as leaf ${escapeHtml(pkg.log.inclusion.leafIndex)} of ${escapeHtml(
        pkg.log.inclusion.treeSize,
      )}: ${yesNo(v.inclusionValid)}</p><p>Signed tree root <span class="hash">${escapeHtml(pkg.log.treeHead.rootHash)}</span> at ${escapeHtml(
        pkg.log.treeHead.timestamp,
      )}</p>`
    : '';
  const download = pkg
    ? `<details><summary>Proof package (JSON, verifiable offline)</summary><pre class="hash">${escapeHtml(JSON.stringify(pkg, null, 2))}</pre></details>`
    : '';
  const heading = v.proofId ? `Proof <span class="hash">${escapeHtml(v.proofId)}</span>` : 'Proof package';
  const template = v.template ?? pkg?.subject.template;
  return `<h1>${heading}</h1>${kindBadge('workflow')}${template ? `<p>Template: <strong>${escapeHtml(template)}</strong></p>` : ''}
${verdictBlock(verdict, verdict === 'verified' && v.approvals === 'asserted' ? assertedNote : '')}
<h2>Public facts</h2><table id="facts"><tbody>${facts}</tbody></table>${reasons}${timeline}${approverSets}${credentials}${chainBlock}${signature}${log}${download}
${another}`;
}

/** The key this service checks a circuit's proofs with: a bundle's must be it (none for an unknown circuit). */
const heldVerificationKey = async (circuit: string): Promise<unknown> =>
  Object.hasOwn(loadManifest().circuits, circuit) ? loadVerificationKey(circuit) : undefined;

/** A pasted bundle's checks, each as npm run verify prints it, under one verdict. */
function bundlePage(v: BundleVerdict, bundled: unknown): string {
  const kind = claimedKind(bundled);
  // Anonymous ballots and proven approvals are Groth16 proofs: forgeable under a development setup.
  const verdict = !v.ok ? 'not-verified' : v.restsOnProofs && insecureSetup() ? 'insecure' : 'verified';
  const text =
    verdict === 'insecure'
      ? INSECURE_TEXT
      : v.ok
        ? "Every check held: this service's log key signed the checkpoint, the witness policy is met, the entry is in the log and names this package, and the package's signature and contents hold."
        : 'A check failed; the list below says which and why. Do not rely on this package.';
  const label = verdict === 'insecure' ? INSECURE_LABEL : v.ok ? 'Verified' : 'Not verified';
  const items = v.findings
    .map(
      (f) =>
        `<li data-ok="${f.ok}"><span class="${f.ok ? 'yes' : 'no'}">${f.ok ? 'valid' : 'INVALID'}</span>: ${escapeHtml(f.text)}</li>`,
    )
    .concat(
      v.warnings.map((w) => `<li data-ok="warning"><span class="no">WARNING</span>: ${escapeHtml(w)}</li>`),
    )
    .join('');
  return `<h1>Offline bundle</h1>${kind ? kindBadge(kind) : ''}<section class="verdict ${verdict}" id="verdict" data-verdict="${verdict}" role="status"><p class="label">${escapeHtml(label)}</p><p>${escapeHtml(text)}</p></section>
<h2>Checks</h2><ul class="reasons" id="bundle-checks">${items}</ul>
<p>Checked against this service's trust root. <code>npm run verify -- &lt;bundle&gt; --trust &lt;trust-root.json&gt;</code> makes the same checks offline, against the trust root you pinned.</p>
${another}`;
}

function notFoundPage(id: string): string {
  return `<h1>Proof not found</h1><section class="verdict not-found" id="verdict" data-verdict="not-found" role="status"><p class="label">Not found</p><p>No proof of any kind has the id <code>${escapeHtml(
    id,
  )}</code>. Check that it was copied whole.</p></section>
${idForm()}`;
}

/** A page that could not be made: busy (the verify pool is full: retry shortly) or broken. */
function unavailable(res: Response, err: unknown): void {
  if (err instanceof AppError && err.code === 'overloaded') {
    res.setHeader('Retry-After', '1');
    return send(res, 503, 'Try again', `<h1>Busy</h1><p>${escapeHtml(err.message)}</p>`);
  }
  logger.error({ err: (err as Error).message }, 'verify page failed');
  send(res, 503, 'Try again', '<h1>Verification is unavailable</h1><p>Try again shortly.</p>');
}

export function pagesRouter(deps: AppDeps): express.Router {
  const router = express.Router();
  const form = express.urlencoded({ extended: false, limit: PASTE_LIMIT_BYTES });
  const json = express.json({ limit: PASTE_LIMIT_BYTES });

  router.use(assetsRouter());
  router.get('/', (_req: Request, res: Response) => sendPage(res, 200, 'proof-exchange', homePage()));

  router.get(`${BASE}/`, (req: Request, res: Response) => {
    const given = req.query.proofId;
    if (given === undefined) return send(res, 200, 'Verify a proof', formPage());
    const id = typeof given === 'string' ? given.trim() : '';
    if (!PROOF_ID.test(id))
      return send(
        res,
        400,
        'Verify a proof',
        formPage('That is not a proof id: a proof id is prf_ followed by 26 letters and digits.', id),
      );
    res.redirect(303, `${BASE}/${id}/`);
  });

  router.post(`${BASE}/`, form, json, async (req: Request, res: Response) => {
    const raw = (req.body as { package?: unknown } | undefined)?.package;
    let pkg: unknown;
    if (typeof raw === 'string') {
      try {
        pkg = JSON.parse(raw);
      } catch {
        return send(
          res,
          400,
          'Verify a proof',
          formPage('The package is not valid JSON: paste the whole document, from { to }.'),
        );
      }
    } else if (raw && typeof raw === 'object') {
      pkg = raw;
    } else {
      return send(res, 400, 'Verify a proof', formPage('Paste a proof package to verify.'));
    }
    try {
      guardInput(pkg, 'package');
    } catch {
      return send(
        res,
        400,
        'Verify a proof',
        formPage('The package nests too deeply or carries control characters; it is not a proof package.'),
      );
    }
    try {
      if ((pkg as { format?: unknown } | null)?.format === BUNDLE_FORMAT) {
        const root = await trustRootDocument(deps.db, `${origin(req, deps, 'site')}${LOG_PATH}/`);
        return send(
          res,
          200,
          'Bundle verification',
          bundlePage(
            await verifyBundle(
              pkg,
              root,
              { ...packageCheckers, governance_package: pooledGovernanceChecker({ req }) },
              heldVerificationKey,
            ),
            (pkg as { package?: unknown }).package,
          ),
        );
      }
      const kind = claimedKind(pkg);
      if (kind && kind !== 'workflow')
        return send(
          res,
          200,
          `${kindLabel[kind]} verification`,
          kindResultPage(await verifyOfKind(deps.db, kind, pkg, { req }), another),
        );
      const verdict = await verifyGivenPackage(deps.db, pkg);
      send(res, 200, 'Proof package verification', resultPage(verdict, pkg ?? null));
    } catch (err) {
      unavailable(res, err);
    }
  });

  router.get(`${BASE}/:proofId/`, async (req: Request, res: Response) => {
    const id = String(req.params.proofId);
    const notFound = () => send(res, 404, 'Proof not found', notFoundPage(id));
    if (!PROOF_ID.test(id)) return notFound();
    try {
      const found = await resolveProofId(deps.db, id);
      if (!found) return notFound();
      if (found.kind === 'treasury' || found.kind === 'blind-policy')
        return send(res, 200, `Proof ${id}`, privateKindPage(id, found.kind, another));
      if (found.kind !== 'workflow') {
        if (!found.package) return notFound();
        const v = await verifyOfKind(deps.db, found.kind, found.package, { req });
        return send(res, 200, `Proof ${id}`, kindResultPage(v, another, found.page));
      }
      const verdict = await verifyStored(deps.db, id);
      if (verdict.status === undefined) return notFound();
      send(res, 200, `Proof ${id}`, resultPage(verdict));
    } catch (err) {
      unavailable(res, err);
    }
  });

  return router;
}
