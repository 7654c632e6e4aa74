// `npm run receipt:verify -- <receipt.json> (--trust <trust-root.json> | <public key>)`: checks a payment
// receipt offline. The file is what getReceipt answered (`{ "receipt": … }`) or the receipt alone. With
// --trust (the document of GET /api/proof-workflows/trust-root, kept beside the receipt) the receipt's
// key must be one the trust root lists for receipts, valid when the receipt was issued and not revoked:
// a receipt signed before the service moved to a new key still verifies. A bare public key (base64url,
// `signingKey.publicKey` of /api/health) checks against that one key alone; given beside --trust, the
// receipt must also be signed by it. Nothing is fetched (shared/payments/receipts.ts, shared/platform/trust.ts).
import { readFileSync } from 'node:fs';
import { formatUnits } from 'viem';
import { checkReceipt } from '../shared/payments/receipts';
import type { Receipt } from '../shared/payments/receipts';
import { parseTrustRoot } from '../shared/platform/trust';
import type { Trust } from '../shared/platform/trust';
import { printable } from '../shared/platform/text';

const usage = `usage: npm run receipt:verify -- <receipt.json> --trust <trust-root.json>
       npm run receipt:verify -- <receipt.json> <public key>
  receipt.json     the answer of GET /api/receipts/{id} (or the receipt alone); - reads stdin
  trust-root.json  the service's trust root (GET /api/proof-workflows/trust-root), kept offline
  public key       one ed25519 key, base64url (signingKey.publicKey of GET /api/health)`;

function readJson(file: string, what: string): unknown {
  try {
    return JSON.parse(readFileSync(file === '-' ? 0 : file, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read ${what} ${file} as JSON (${(err as Error).message})`);
  }
}

function main(): number {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const at = args.indexOf('--trust');
  const trustFile = at >= 0 ? args[at + 1] : undefined;
  const rest = at >= 0 ? [...args.slice(0, at), ...args.slice(at + 2)] : args;
  const [file, publicKey, ...extra] = rest;
  if (!file || (at >= 0 && !trustFile) || (!trustFile && !publicKey) || extra.length > 0) {
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  let doc: { receipt?: Receipt } & Partial<Receipt>;
  let trust: Trust;
  try {
    doc = readJson(file, 'the receipt') as typeof doc;
    trust = trustFile ? parseTrustRoot(readJson(trustFile, 'the trust root')) : publicKey!;
  } catch (err) {
    process.stderr.write(`receipt:verify: ${(err as Error).message}\n`);
    return 2;
  }
  const receipt = (doc.receipt ?? doc) as Receipt;
  const verdict = checkReceipt(receipt, trust);
  const pinned = !trustFile || !publicKey || (verdict.ok && verdict.key.publicKey === publicKey);
  if (!verdict.ok || !pinned) {
    const why = !verdict.ok
      ? `${verdict.reason}: ${verdict.detail}`
      : `signed by key ${receipt.keyId}, not by the public key given`;
    process.stdout.write(`${printable(`INVALID: ${receipt?.id ?? 'the receipt'} (${why})`)}\n`);
    return 1;
  }
  const amount = formatUnits(BigInt(receipt.amount), receipt.decimals);
  // Every field is the file's: escaped for the terminal.
  process.stdout.write(
    `${printable(
      `valid: receipt ${receipt.id} signed by ${receipt.keyId}: ${amount} ${receipt.asset} on ${receipt.network} ` +
        `(tx ${receipt.transaction.txRef}) paid job ${receipt.jobId} (${receipt.serviceId}), settlement ${receipt.settlement}`,
    )}\n`,
  );
  return 0;
}

process.exitCode = main();
