// Public, server-rendered verification pages: a form for a proof id or a pasted package, and a result
// page with the public facts only. No external assets; every value is escaped.
import express from 'express';
import type { Request, Response } from 'express';
import { idPattern } from '../../shared/ids';
import { logger } from '../../shared/log';
import { verifyGivenPackage, verifyStored } from '../../shared/workflows/store';
import type { Verification } from '../../shared/workflows/store';
import type { AppDeps } from '../deps';
import { escapeHtml, sendPage, yesNo } from './layout';

export { escapeHtml };

const BASE = '/proof-workflows/verify';
const PROOF_ID = idPattern('prf');
/** A pasted package can be larger than an API body; still bounded. */
const PASTE_LIMIT_BYTES = 1024 * 1024;

function send(res: Response, status: number, title: string, body: string): void {
  sendPage(res, status, title, body, { scripts: true });
}

function formPage(error?: string): string {
  return `<h1>Verify a proof workflow</h1>
<p>Check that a workflow existed, completed, met its required approvals, followed its required sequence, and that no record was altered.</p>
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}
<h2>By proof id</h2>
<form method="get" action="${BASE}/" id="by-id">
<label for="proofId">Proof id</label><br>
<input type="text" id="proofId" name="proofId" placeholder="prf_…" required pattern="prf_[0-9a-z]{26}" autocomplete="off">
<button type="submit">Verify</button>
</form>
<h2>By proof package</h2>
<form method="post" action="${BASE}/" id="by-package">
<label for="package">Paste the package JSON</label><br>
<textarea id="package" name="package" required></textarea><br>
<button type="submit">Verify package</button>
</form>
<script>
// Sends the package as JSON where scripts run; without them the form posts as usual.
document.getElementById('by-package').addEventListener('submit', function (e) {
  e.preventDefault();
  fetch('${BASE}/', { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ package: document.getElementById('package').value }) })
    .then(function (r) { return r.text(); })
    .then(function (html) { document.open(); document.write(html); document.close(); });
});
</script>`;
}

const factRows: Array<[keyof Verification, string]> = [
  ['existed', 'Existed'],
  ['completed', 'Completed'],
  ['approvalsMet', 'Required approvals happened'],
  ['sequenceRespected', 'Required sequence respected'],
  ['notAltered', 'No record was altered'],
];

function resultPage(v: Verification): string {
  const facts = factRows
    .map(
      ([k, label]) =>
        `<tr><th scope="row">${escapeHtml(label)}</th><td data-fact="${escapeHtml(k)}">${yesNo(v[k] as boolean)}</td></tr>`,
    )
    .join('');
  const reasons = v.reasons.length
    ? `<h2>Why</h2><ul>${v.reasons
        .map(
          (r) =>
            `<li><code>${escapeHtml(r.check)}</code> — <code>${escapeHtml(r.code)}</code>${r.stage ? ` (stage <code>${escapeHtml(r.stage)}</code>)` : ''}: ${escapeHtml(r.detail)}</li>`,
        )
        .join('')}</ul>`
    : '';
  const stages = v.stages ?? v.package?.stages ?? [];
  const timeline = stages.length
    ? `<h2>Stage timeline</h2><table><thead><tr><th>Stage</th><th>Status</th><th>Time</th><th>Proof hash</th><th>Actor commitment</th></tr></thead><tbody>${stages
        .map(
          (s) =>
            `<tr data-stage="${escapeHtml(s.key)}"><td>${escapeHtml(s.name)}</td><td>${escapeHtml(s.status)}${
              s.approvals ? ` (${escapeHtml(s.approvals)} approval${s.approvals === 1 ? '' : 's'})` : ''
            }</td><td>${escapeHtml(s.timestamp ?? '—')}</td><td class="hash">${escapeHtml(s.proofHash ?? '—')}</td><td class="hash">${
              s.actorCommitments.length
                ? s.actorCommitments.map(escapeHtml).join('<br>')
                : escapeHtml(s.actorCommitment ?? '—')
            }</td></tr>`,
        )
        .join('')}</tbody></table>`
    : '';
  const chain = v.chain ?? v.package?.chain;
  const pkg = v.package;
  const chainBlock = chain
    ? `<h2>Audit chain</h2><p>Chain head <span class="hash" id="chain-head">${escapeHtml(chain.head)}</span> after ${escapeHtml(
        chain.length,
      )} entries.</p>`
    : '';
  const signature = pkg
    ? `<h2>Signature</h2><p>Signed by key <code>${escapeHtml(pkg.issuer.keyId)}</code> (ed25519): ${yesNo(v.signatureValid)}</p><p class="hash">${escapeHtml(
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
  const heading = v.proofId ? `Proof ${escapeHtml(v.proofId)}` : 'Proof package';
  const template = v.template ?? pkg?.subject.template;
  return `<h1>${heading}</h1>${template ? `<p>Template: ${escapeHtml(template)}</p>` : ''}
<table id="facts"><tbody>${facts}</tbody></table>${reasons}${timeline}${chainBlock}${signature}${log}${download}
<p><a href="${BASE}/">Verify another</a></p>`;
}

export function pagesRouter(deps: AppDeps): express.Router {
  const router = express.Router();
  const form = express.urlencoded({ extended: false, limit: PASTE_LIMIT_BYTES });
  const json = express.json({ limit: PASTE_LIMIT_BYTES });

  router.get(`${BASE}/`, (req: Request, res: Response) => {
    const given = req.query.proofId;
    if (given === undefined) return send(res, 200, 'Verify a proof workflow', formPage());
    const id = typeof given === 'string' ? given.trim() : '';
    if (!PROOF_ID.test(id))
      return send(res, 400, 'Verify a proof workflow', formPage('That is not a proof id (prf_…).'));
    res.redirect(303, `${BASE}/${id}/`);
  });

  router.post(`${BASE}/`, form, json, (req: Request, res: Response) => {
    const raw = (req.body as { package?: unknown } | undefined)?.package;
    let pkg: unknown;
    if (typeof raw === 'string') {
      try {
        pkg = JSON.parse(raw);
      } catch {
        return send(res, 400, 'Verify a proof workflow', formPage('The package is not valid JSON.'));
      }
    } else if (raw && typeof raw === 'object') {
      pkg = raw;
    } else {
      return send(res, 400, 'Verify a proof workflow', formPage('Paste a proof package to verify.'));
    }
    send(res, 200, 'Proof package verification', resultPage(verifyGivenPackage(pkg)));
  });

  router.get(`${BASE}/:proofId/`, async (req: Request, res: Response) => {
    const id = String(req.params.proofId);
    const notFoundPage = () =>
      send(
        res,
        404,
        'Proof not found',
        `<h1>Proof not found</h1><p>No workflow has this proof id.</p><p><a href="${BASE}/">Verify another</a></p>`,
      );
    if (!PROOF_ID.test(id)) return notFoundPage();
    try {
      const verdict = await verifyStored(deps.db, id);
      if (verdict.status === undefined) return notFoundPage();
      send(res, 200, `Proof ${id}`, resultPage(verdict));
    } catch (err) {
      logger.error({ err: (err as Error).message }, 'verify page failed');
      send(res, 503, 'Try again', '<h1>Verification is unavailable</h1><p>Try again shortly.</p>');
    }
  });

  return router;
}
