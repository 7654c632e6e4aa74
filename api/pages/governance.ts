// Public pages of governance and auctions, in the style of the verification pages: server-rendered,
// every value escaped, no external assets. A live vote shows status, time remaining and how to vote:
// in the page (the proof made in the browser) or with the CLI. Also serves the ballot circuit's public
// artifacts and the snarkjs browser build, which voters' clients prove with.
import express from 'express';
import type { Request, Response } from 'express';
import { BALLOT_CIRCUIT } from '../../shared/governance/ballot-protocol';
import { CREDENTIALED_APPROVAL_CIRCUIT } from '../../shared/zk/anonymity';
import { AppError } from '../../shared/platform/errors';
import { idPattern } from '../../shared/platform/ids';
import { logger } from '../../shared/platform/log';
import { projectPath } from '../../shared/platform/paths';
import { ballotKeyInfo } from '../../shared/governance/ballots';
import { proposalPackage, publicProposal } from '../../shared/governance/proposals';
import { artifactPaths, loadManifest } from '../../shared/zk/artifacts';
import type { AppDeps } from '../deps';
import { verifyGovernanceAsService } from '../offload/governance';
import { auctionPage, formatSeconds } from './auctions';
import { ballotForm } from './ballot-script';
import { newNonce } from './csp';
import { nobleFiles } from './noble-assets';
import { trusteePage } from './trustee-script';
import { origin } from '../http/links';
import { escapeHtml, sendPage as sendAnyPage, yesNo } from './layout';

/**
 * `<circuit>.vkey.json` of a circuit of the manifest: the key the service verifies that circuit's proofs
 * with, so `snarkjs groth16 verify` runs on what it publishes. Undefined for any other name.
 */
function verificationKeyFile(file: string): string | undefined {
  const circuit = /^([a-z][a-z0-9_-]{0,63})\.vkey\.json$/.exec(file)?.[1];
  if (!circuit || !Object.hasOwn(loadManifest().circuits, circuit)) return undefined;
  return artifactPaths(circuit).vkey;
}

/** Live states change by the second: these pages are never cached. */
const sendPage = (res: Response, status: number, title: string, body: string) =>
  sendAnyPage(res, status, title, body, { noStore: true });

/** What a page handler renders: its title and body, and for a page with scripts, what they need. */
type Rendered = [string, string] | [string, string, { scripts: { wasm?: boolean } }];

/**
 * Renders a handler's page, mapping not-found to a 404 page and store outages to a 503 page. The
 * response's script nonce is made here, fresh each time: a page with scripts puts it on every script
 * it sends, and its policy allows those scripts only.
 */
export async function renderPage(
  res: Response,
  what: string,
  render: (nonce: string) => Promise<Rendered>,
  current?: string,
) {
  try {
    const nonce = newNonce();
    const [title, body, own] = await render(nonce);
    sendAnyPage(res, 200, title, body, {
      noStore: true,
      ...(current ? { current } : {}),
      ...(own ? { scripts: { nonce, ...own.scripts } } : {}),
    });
  } catch (err) {
    if (err instanceof AppError && err.status === 404)
      return sendPage(res, 404, `${what} not found`, `<h1>${escapeHtml(what)} not found</h1>`);
    if (err instanceof AppError && err.code === 'overloaded') {
      res.setHeader('Retry-After', '1');
      return sendPage(res, 503, 'Try again', `<h1>Busy</h1><p>${escapeHtml(err.message)}</p>`);
    }
    logger.error({ err: (err as Error).message }, 'page failed');
    sendPage(res, 503, 'Try again', '<h1>This page is unavailable</h1><p>Try again shortly.</p>');
  }
}

/** The question and what a ballot may say: public from the start, so voters see what they vote on. */
const questionBlock = (title: string, options: readonly string[]): string =>
  `<p class="question" id="question">${escapeHtml(title)}</p>
<h2>Options</h2><ul class="options" id="options">${options
    .map((o) => `<li data-option="${escapeHtml(o)}">${escapeHtml(o)}</li>`)
    .join('')}</ul>`;

async function proposalPage(deps: AppDeps, id: string, req: Request, nonce: string): Promise<Rendered> {
  const state = await publicProposal(deps.db, id, deps.clock);
  const heading = `<h1>Proposal ${escapeHtml(id)}</h1>${questionBlock(state.title, state.options)}`;
  if (state.status === 'voting') {
    const key = await ballotKeyInfo(deps.db, id);
    // Under the trustees' key the page encrypts with ristretto255 (@noble/curves, served as modules).
    const form =
      (key.scheme === 'threshold'
        ? `<p id="trustee-note">This vote’s ballots are encrypted to the joint key of the room’s trustees (${escapeHtml(
            key.trustees?.names.join(', ') ?? '',
          )}): any ${escapeHtml(key.trustees?.threshold ?? '')} of them open the ballots after the close, and no one else can, the service included.</p>`
        : '') + ballotForm(id, state.options, key.scheme, nonce);
    return [
      `Proposal ${id}`,
      `${heading}<p class="live" id="live">Status: <strong data-status="voting">voting</strong>. Time remaining: <strong id="time-remaining">${escapeHtml(
        formatSeconds(state.timeRemainingSeconds),
      )}</strong> (closes ${escapeHtml(state.votingEndsAt)}).</p>
<p class="next" id="next">When the time runs out the vote closes: every ballot is opened and counted, the tally is published with a signed proof package, and this page shows it. Until then no counts, ratios or addresses are shown.</p>
<h2>How to vote</h2>
<p>Ballots are anonymous: your machine proves that you hold an identity of the room’s member tree and encrypts your vote to this proposal’s key; the service receives a nullifier, a ciphertext and a proof, never who you are. The identity secret never leaves your machine. A vote that is not exactly one of the options above is counted as spoiled, so the clients refuse to make one.</p>
<ol>
<li>Once per room, make an identity and have its commitment added to the room: <code>npm run ballot -- identity --out my-identity.json</code></li>
<li>Vote: <code>npm run ballot -- vote --url ${escapeHtml(origin(req, deps, 'base'))} --proposal ${escapeHtml(id)} --identity my-identity.json --choice ${escapeHtml(state.options[0] ?? '<option>')}</code> (with your choice: one of ${escapeHtml(state.options.join(', '))})</li>
<li>Keep the receipt it prints: after the close, <code>POST /api/governance/verify</code> with the package and the receipt shows your ballot was counted as cast.</li>
</ol>
<p>The client downloads the room’s whole member list (never only your own path, which would say who is voting) and the circuit: <a href="/circuits/${BALLOT_CIRCUIT}.wasm">${BALLOT_CIRCUIT}.wasm</a>, <a href="/circuits/${BALLOT_CIRCUIT}.zkey">${BALLOT_CIRCUIT}.zkey</a>, <a href="/circuits/${BALLOT_CIRCUIT}.vkey.json">${BALLOT_CIRCUIT}.vkey.json</a>. Send your ballot over a network path that does not name you (Tor, a relay) if your address must stay apart from your vote.</p>
${form}`,
      // snarkjs compiles the circuit's WebAssembly.
      { scripts: { wasm: true } },
    ];
  }
  if (state.status === 'review') {
    const runs =
      state.votingSeconds !== null
        ? `it then runs for ${escapeHtml(formatSeconds(state.votingSeconds))}`
        : `it then runs until ${escapeHtml(state.votingEndsAt)}`;
    return [
      `Proposal ${id}`,
      `${heading}<p>Status: <strong data-status="review">review</strong>.</p>
<p class="next" id="next">Voting opens when ${escapeHtml(state.reviewThreshold)} ${
        state.reviewThreshold === 1
          ? 'member of the review committee approves'
          : 'members of the review committee approve'
      }; ${runs}. Reload this page then to vote.</p>`,
    ];
  }
  if (state.status === 'rejected')
    return [
      `Proposal ${id}`,
      `${heading}<p>Status: <strong data-status="rejected">rejected</strong>.</p>
<p class="next" id="next">The review committee rejected this proposal: no vote is held.</p>`,
    ];

  if (state.status === 'decrypting')
    return [
      `Proposal ${id}`,
      `${heading}<p>Status: <strong data-status="decrypting">decrypting</strong>. ${escapeHtml(state.ballotCount)} ballot${
        state.ballotCount === 1 ? '' : 's'
      } cast; the vote closed ${escapeHtml(state.votingEndsAt)}.</p>
<p class="next" id="next">The ballots are encrypted to the room’s trustees: ${escapeHtml(state.trusteesDecrypted)} of the ${escapeHtml(
        state.trusteesNeeded,
      )} trustees needed have published their partial decryptions. When ${escapeHtml(state.trusteesNeeded)} have, the ballots are opened, counted, and the tally is published here with its proof package. Until then nobody, the service included, can read a ballot.</p>`,
    ];

  const pkg = await proposalPackage(deps.db, id, undefined, deps.clock);
  // The package's verdict is worked out once per process, in the verify pool, and remembered.
  const { verdict: v } = await verifyGovernanceAsService(deps.db, pkg, { req });
  // One row per option, then the spoiled ballots: the rows add up to every ballot cast.
  const rows = state.options
    .map(
      (o) =>
        `<tr${o === state.winner ? ' class="winner"' : ''}><th scope="row">${escapeHtml(o)}${
          o === state.winner ? ' <span class="badge">winner</span>' : ''
        }</th><td data-option="${escapeHtml(o)}">${escapeHtml(state.tally[o] ?? 0)}</td></tr>`,
    )
    .concat(
      `<tr class="spoiled"><th scope="row"><em>Spoiled</em> (none of the options)</th><td data-option="spoiled">${escapeHtml(
        state.spoiledCount,
      )}</td></tr>`,
    )
    .join('');
  const counts = `${state.ballotCount} ballot${state.ballotCount === 1 ? '' : 's'}: ${state.countedCount} counted, ${state.spoiledCount} spoiled`;
  // Ballots in the package's canonical order (by nullifier, or by commitment for the first scheme), never
  // by arrival, and without times.
  const ballots = pkg.ballots
    .map((b) => {
      const name = 'nullifier' in b ? b.nullifier : b.commitment;
      return `<tr><td class="hash">${escapeHtml(name)}</td><td>${b.choice === null ? '<em>spoiled</em>' : escapeHtml(b.choice)}</td></tr>`;
    })
    .join('');
  const timeline = pkg.chain.entries
    .map(
      (e) =>
        `<tr><td>${escapeHtml(e.stage)}</td><td>${escapeHtml(e.action)}</td><td>${escapeHtml(e.at)}</td><td class="hash">${escapeHtml(
          e.actorCommitment ?? '—',
        )}</td><td class="hash">${escapeHtml(e.entryHash)}</td></tr>`,
    )
    .join('');
  return [
    `Proposal ${id}`,
    `${heading}
<p>Status: <strong data-status="${escapeHtml(state.status)}">${escapeHtml(state.status)}</strong>. Outcome: <strong id="outcome">${escapeHtml(
      state.outcome,
    )}</strong>${state.winner ? ` — <strong>${escapeHtml(state.winner)}</strong>` : ''}.</p>
<p class="next" id="next">The vote is closed: the tally below is recomputed from the published ballots. ${
      state.executed
        ? 'Its execution is recorded in the final package.'
        : state.outcome === 'passed'
          ? 'The administrator records its execution next.'
          : 'Nothing is executed.'
    }</p>
<h2>Tally</h2><p id="ballot-counts">${escapeHtml(counts)}</p>
<div class="table-wrap"><table id="tally"><thead><tr><th scope="col">Option</th><th scope="col">Ballots</th></tr></thead><tbody>${rows}</tbody></table></div>
<h2>Verification of package ${escapeHtml(pkg.proofId)}</h2><table id="facts"><tbody>
<tr><th scope="row">Signature valid</th><td>${yesNo(v.signatureValid)}</td></tr>
<tr><th scope="row">In the transparency log</th><td>${yesNo(v.inclusionValid)}</td></tr>
<tr><th scope="row">Every ballot proves membership and opens to its vote</th><td>${yesNo(v.ballotsValid)}</td></tr>
<tr><th scope="row">Tally recomputed from the ballots</th><td>${yesNo(v.tallyValid)}</td></tr>
<tr><th scope="row">Review approvals met before the vote</th><td>${yesNo(v.reviewMet)}</td></tr>
<tr><th scope="row">Audit chain intact</th><td>${yesNo(v.chainValid)}</td></tr>
</tbody></table>
<p>Ballots root <span class="hash">${escapeHtml(pkg.ballotsRoot)}</span>; chain head <span class="hash">${escapeHtml(pkg.chain.head)}</span>.</p>
<h2>Timeline</h2><div class="table-wrap"><table><thead><tr><th>Stage</th><th>Action</th><th>Time</th><th>Actor commitment</th><th>Entry hash</th></tr></thead><tbody>${timeline}</tbody></table></div>
<h2 id="ballots-heading">Ballots (${escapeHtml(pkg.ballots.length)})</h2><div class="table-wrap"><table id="ballots"><thead><tr><th>${'scheme' in pkg ? 'Nullifier' : 'Commitment'}</th><th>Vote</th></tr></thead><tbody>${ballots}</tbody></table></div>
<details><summary>Proof package (JSON, verifiable offline)</summary><pre class="hash">${escapeHtml(JSON.stringify(pkg, null, 2))}</pre></details>`,
  ];
}

const INDEX_LIMIT = 100;

/**
 * Proposals whose vote has closed: their packages are on the public log already. A vote still in
 * review or open is reached by the link its room shares, never listed (a listing would announce a
 * room's business to everyone).
 */
async function governanceIndex(deps: AppDeps): Promise<[string, string]> {
  const rows = (await deps
    .db('proposals')
    .whereIn('status', ['closed', 'executed'])
    .orderBy('updated_at', 'desc')
    .limit(INDEX_LIMIT)
    .select('id', 'title', 'status', 'outcome', 'tally_proof_id', 'final_proof_id')) as Array<{
    id: string;
    title: string;
    status: string;
    outcome: string | null;
    tally_proof_id: string | null;
    final_proof_id: string | null;
  }>;
  // The package to check: the final one once executed (it carries the tally), else the tally's.
  const proofOf = (r: (typeof rows)[number]) => r.final_proof_id ?? r.tally_proof_id;
  const list = rows.length
    ? `<div class="table-wrap"><table id="proposals"><thead><tr><th>Proposal</th><th>Status</th><th>Outcome</th><th>Proof</th></tr></thead><tbody>${rows
        .map(
          (r) =>
            `<tr data-proposal="${escapeHtml(r.id)}"><td><a href="/governance/proposals/${escapeHtml(r.id)}/">${escapeHtml(
              r.title,
            )}</a></td><td>${escapeHtml(r.status)}</td><td>${escapeHtml(r.outcome ?? '—')}</td><td>${
              proofOf(r)
                ? `<a class="hash" href="/proof-workflows/verify/${escapeHtml(proofOf(r))}/">${escapeHtml(proofOf(r))}</a>`
                : '—'
            }</td></tr>`,
        )
        .join('')}</tbody></table></div>`
    : '<p id="proposals-empty">No vote has closed yet.</p>';
  return [
    'Governance',
    `<h1>Governance</h1>
<p class="lead">Private votes: Proposal → Review → Vote → Execution → Proof. Ballots are anonymous membership proofs; each closed vote publishes every ballot, the tally and a signed proof package anyone can recompute.</p>
<p>Votes that have closed, newest first, each with its proof package (the final one once executed). A vote in review or open is reached by the link its room shares.</p>
<p>A room's trustee takes part in its key ceremony and opens its ballots after the close on the <a href="/governance/trustee/">trustee page</a>, in this browser, or with <code>npm run trustee</code>.</p>
${list}`,
  ];
}

/** Public auctions (not a room's own), newest first: status while bidding, the outcome once finalized. */
async function auctionsIndex(deps: AppDeps): Promise<[string, string]> {
  const rows = (await deps
    .db('auctions')
    .whereNull('room_id')
    .orderBy('created_at', 'desc')
    .limit(INDEX_LIMIT)
    .select('id', 'title', 'status', 'pricing', 'proof_id')) as Array<{
    id: string;
    title: string;
    status: string;
    pricing: string;
    proof_id: string | null;
  }>;
  const list = rows.length
    ? `<div class="table-wrap"><table id="auctions"><thead><tr><th>Auction</th><th>Pricing</th><th>Status</th><th>Proof</th></tr></thead><tbody>${rows
        .map(
          (r) =>
            `<tr data-auction="${escapeHtml(r.id)}"><td><a href="/auctions/${escapeHtml(r.id)}/">${escapeHtml(
              r.title,
            )}</a></td><td>${escapeHtml(r.pricing)}-price</td><td>${escapeHtml(r.status)}</td><td>${
              r.proof_id
                ? `<a class="hash" href="/proof-workflows/verify/${escapeHtml(r.proof_id)}/">${escapeHtml(r.proof_id)}</a>`
                : '—'
            }</td></tr>`,
        )
        .join('')}</tbody></table></div>`
    : '<p id="auctions-empty">No public auction yet.</p>';
  return [
    'Auctions',
    `<h1>Sealed auctions</h1>
<p class="lead">Bids are committed while bidding is open and revealed after; nothing about bids is shown until the reveal window ends. Each finalized auction publishes every bid and a signed proof package.</p>
${list}`,
  ];
}

/** The governance and auction pages, mounted beside the verification pages. */
export function coordinationPagesRouter(deps: AppDeps): express.Router {
  const router = express.Router();
  const proposalId = idPattern('prop');
  const auctionId = idPattern('auc');
  router.get('/governance/', (_req, res) =>
    renderPage(res, 'Governance', () => governanceIndex(deps), '/governance/'),
  );
  // The trustee's client in the browser: ceremony and decryption, the trustee's file kept in the page.
  router.get('/governance/trustee/', (_req, res) =>
    renderPage(res, 'Trustee', async (nonce) => ['Trustee', trusteePage(nonce), { scripts: {} }]),
  );
  router.get('/auctions/', (_req, res) =>
    renderPage(res, 'Auctions', () => auctionsIndex(deps), '/auctions/'),
  );
  router.get('/governance/proposals/:proposalId/', (req, res) => {
    const id = String(req.params.proposalId);
    if (!proposalId.test(id)) return sendPage(res, 404, 'Proposal not found', '<h1>Proposal not found</h1>');
    return renderPage(res, 'Proposal', (nonce) => proposalPage(deps, id, req, nonce));
  });
  // The ballot circuit's public artifacts, for voters' and approvers' clients, and the credentialed
  // approval circuit's, for approvers who prove a credential inside the approval; every circuit's
  // verification key (verificationKeyFile), for verifiers with standard tools.
  const artifactFiles = new Map(
    [BALLOT_CIRCUIT, CREDENTIALED_APPROVAL_CIRCUIT].flatMap((circuit) =>
      (['wasm', 'zkey', 'vkey'] as const).map((kind) => {
        const path = artifactPaths(circuit)[kind];
        return [path.slice(path.lastIndexOf('/') + 1), path] as const;
      }),
    ),
  );
  artifactFiles.set('snarkjs.min.js', projectPath('node_modules/snarkjs/build/snarkjs.min.js'));
  // ristretto255 for the voting page under the trustees' key: @noble/curves' modules as published.
  router.get('/circuits/noble/*file', (req, res, next) => {
    const parts = (req.params as { file?: string[] }).file ?? [];
    const path = nobleFiles().get(parts.join('/'));
    if (!path) return next();
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.type('text/javascript');
    res.sendFile(path, (err) => {
      if (err && !res.headersSent) sendPage(res, 404, 'Not found', '<h1>Not found</h1>');
    });
  });
  router.get('/circuits/:file', (req, res, next) => {
    const path = artifactFiles.get(String(req.params.file)) ?? verificationKeyFile(String(req.params.file));
    if (!path) return next();
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.sendFile(path, (err) => {
      if (err && !res.headersSent) sendPage(res, 404, 'Not found', '<h1>Not found</h1>');
    });
  });
  router.get('/auctions/:auctionId/', (req, res) => {
    const id = String(req.params.auctionId);
    if (!auctionId.test(id)) return sendPage(res, 404, 'Auction not found', '<h1>Auction not found</h1>');
    return renderPage(res, 'Auction', () => auctionPage(deps, id));
  });
  return router;
}
