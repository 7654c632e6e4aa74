// `npm run receipt:verify -- <receipt.json> <public key>`: checks a payment receipt offline. The file is
// what getReceipt answered (`{ "receipt": … }`) or the receipt alone; the key is the service's ed25519
// public key (base64url), `signingKey.publicKey` of /api/health or `receiptPublicKey.publicKey` of
// /api/discovery. Nothing is fetched: the signature is checked here (shared/payments/receipts.ts).
import { readFileSync } from 'node:fs';
import { formatUnits } from 'viem';
import { verifyReceipt } from '../payments/receipts';
import type { Receipt } from '../payments/receipts';

const usage = `usage: npm run receipt:verify -- <receipt.json> <public key>
  receipt.json  the answer of GET /api/receipts/{id} (or the receipt alone); - reads stdin
  public key    the service's ed25519 key, base64url (signingKey.publicKey of GET /api/health)`;

function main(): number {
  const [file, publicKey, ...rest] = process.argv.slice(2);
  if (!file || !publicKey || rest.length > 0) {
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  let doc: { receipt?: Receipt } & Partial<Receipt>;
  try {
    doc = JSON.parse(readFileSync(file === '-' ? 0 : file, 'utf8')) as typeof doc;
  } catch (err) {
    process.stderr.write(`receipt:verify: cannot read ${file} as JSON (${(err as Error).message})\n`);
    return 2;
  }
  const receipt = (doc.receipt ?? doc) as Receipt;
  if (!verifyReceipt(receipt, publicKey)) {
    process.stdout.write(
      `INVALID: ${receipt?.id ?? 'the receipt'} was not signed by this key, or was changed since it was signed\n`,
    );
    return 1;
  }
  const amount = formatUnits(BigInt(receipt.amount), receipt.decimals);
  process.stdout.write(
    `valid: receipt ${receipt.id} signed by ${receipt.keyId}: ${amount} ${receipt.asset} on ${receipt.network} ` +
      `(tx ${receipt.transaction.txRef}) paid job ${receipt.jobId} (${receipt.serviceId}), settlement ${receipt.settlement}\n`,
  );
  return 0;
}

process.exitCode = main();
