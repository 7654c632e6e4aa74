// The public page of a sealed auction: its stated rules, status and time remaining while open, and the
// outcome, every bid and the package's verification once finalized. Mounted by ./governance.
import { auctionPackage, publicAuction } from '../../shared/auctions/auctions';
import { verifyAuctionPackage } from '../../shared/auctions/package';
import { findAsset } from '../../shared/chains/assets';
import { formatUnits } from '../../shared/payments/pricing';
import { verifyUnderServiceTrust } from '../../shared/proofs/service-trust';
import type { AppDeps } from '../deps';
import { escapeHtml, yesNo } from './layout';

export function formatSeconds(s: number): string {
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  return [d ? `${d} d` : '', h ? `${h} h` : '', m ? `${m} min` : '', `${s % 60} s`].filter(Boolean).join(' ');
}

/**
 * An amount as a person reads it: whole coins and the asset's symbol ("1.8 USDC"), the base units the
 * rules and the package count kept in its data attribute; base units alone for an asset no longer listed.
 */
function amountHtml(assetId: string, baseUnits: string | null | undefined, id?: string): string {
  const attr = id ? ` id="${id}"` : '';
  if (baseUnits === null || baseUnits === undefined || !/^\d+$/.test(baseUnits))
    return `<span${attr}>—</span>`;
  const asset = findAsset(assetId);
  const shown = asset
    ? `${formatUnits(BigInt(baseUnits), asset.decimals)} ${asset.symbol}`
    : `${baseUnits} base units`;
  return `<span${attr} data-base-units="${escapeHtml(baseUnits)}">${escapeHtml(shown)}</span>`;
}

export async function auctionPage(deps: AppDeps, id: string): Promise<[string, string]> {
  const a = await publicAuction(deps.db, id, deps.clock);
  const asset = findAsset(a.asset);
  const rules = Object.entries(a.rules)
    .map(([k, v]) => `<tr><th scope="row">${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`)
    .join('');
  const head = `<h1>Auction ${escapeHtml(id)}</h1><p>${escapeHtml(a.title)} — ${escapeHtml(a.visibility)}, ${escapeHtml(
    a.pricing,
  )}-price, in ${escapeHtml(asset ? `${asset.symbol} (${asset.name}, ${asset.decimals} decimals)` : a.asset)}. The stated rules and the package count amounts in base units (10^${escapeHtml(asset?.decimals ?? '?')} a coin).</p>`;
  const rulesBlock = `<h2>Rules (stated before bidding)</h2><table id="rules"><tbody>${rules}</tbody></table>`;
  if (a.status === 'awaiting_trustees')
    return [
      `Auction ${id}`,
      `${head}<p class="live" id="live">Status: <strong data-status="awaiting_trustees">awaiting trustees</strong>.</p><p class="next" id="next">The reveal window has ended. Every bid’s opening is sealed to the room’s trustees: ${escapeHtml(
        a.trusteesDecrypted ?? 0,
      )} of the ${escapeHtml(a.trusteesNeeded ?? 0)} trustees needed have decrypted them. When ${escapeHtml(
        a.trusteesNeeded ?? 0,
      )} have, every bid is opened and the auction decided here, with its proof package.</p>${rulesBlock}`,
    ];
  if (a.status !== 'finalized') {
    return [
      `Auction ${id}`,
      `${head}<p class="live" id="live">Status: <strong data-status="${escapeHtml(a.status)}">${escapeHtml(
        a.status,
      )}</strong>. Time remaining: <strong id="time-remaining">${escapeHtml(
        formatSeconds(a.timeRemainingSeconds),
      )}</strong>.</p><p>Nothing about bids is shown until the reveal window ends.</p>${rulesBlock}`,
    ];
  }
  const pkg = await auctionPackage(deps.db, id, deps.clock);
  const v = await verifyUnderServiceTrust(deps.db, pkg, (trust, opts) =>
    verifyAuctionPackage(pkg, trust, opts),
  );
  const fate = new Map(pkg.outcome.bids.map((b) => [b.commitment, b]));
  const bids = pkg.bids
    .map(
      (b) =>
        `<tr><td class="hash">${escapeHtml(b.commitment)}</td><td class="hash">${b.bidder ? escapeHtml(b.bidder) : '<em>not named</em>'}</td><td>${amountHtml(
          a.asset,
          b.reveal?.amount,
        )}</td><td>${escapeHtml(fate.get(b.commitment)?.status)}</td><td>${escapeHtml(fate.get(b.commitment)?.deposit)}</td></tr>`,
    )
    .join('');
  const r = a.result!;
  return [
    `Auction ${id}`,
    `${head}<p>Status: <strong data-status="finalized">finalized</strong>. Winner: <strong id="winner" class="hash">${escapeHtml(
      r.winner ?? 'none',
    )}</strong>; price: <strong>${amountHtml(a.asset, r.price, 'price')}</strong> (${escapeHtml(r.reason)}).</p>
<h2>Verification of package ${escapeHtml(pkg.proofId)}</h2><table id="facts"><tbody>
<tr><th scope="row">Signature valid</th><td>${yesNo(v.signatureValid)}</td></tr>
<tr><th scope="row">In the transparency log</th><td>${yesNo(v.inclusionValid)}</td></tr>
<tr><th scope="row">Every reveal opens its commitment</th><td>${yesNo(v.revealsValid)}</td></tr>
<tr><th scope="row">Merkle roots recomputed</th><td>${yesNo(v.rootsValid)}</td></tr>
<tr><th scope="row">Outcome follows the stated rules</th><td>${yesNo(v.outcomeValid)}</td></tr>
</tbody></table>
<p>Commitments root <span class="hash">${escapeHtml(pkg.commitmentsRoot)}</span>; reveals root <span class="hash">${escapeHtml(
      pkg.revealsRoot,
    )}</span>.</p>
<h2>Bids</h2><table id="bids"><thead><tr><th>Commitment</th><th>Bidder</th><th>Amount</th><th>Status</th><th>Deposit</th></tr></thead><tbody>${bids}</tbody></table>
${rulesBlock}
<details><summary>Proof package (JSON, verifiable offline)</summary><pre class="hash">${escapeHtml(JSON.stringify(pkg, null, 2))}</pre></details>`,
  ];
}
