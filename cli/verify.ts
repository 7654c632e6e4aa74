// `npm run verify -- <bundle.json> --trust <trust-root.json>`: checks a published package's offline
// bundle (proof-exchange/bundle/v1) against a pinned trust root, with no network and no database: the
// trust root's log key signed the checkpoint, its policy's witness quorum cosigned it, the entry is in
// the checkpoint's tree and names this package, and the package's signature (a key of the trust root,
// valid when it signed) and contents hold (shared/platform/translog/bundle.ts and each line's verifier).
// Prints `valid: …` lines and exits 0, or `INVALID: …` and exits 1; 2 for a usage or file error. Beside
// a verdict, `WARNING: …` lines say what it does not mean: proofs checked with keys of the insecure
// development setup (the committed circuits/artifacts, whose manifest says so), approvals asserted and
// not proven.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { checkAuctionPackage } from '../shared/auctions/package';
import { governancePackageChecker } from '../shared/governance/package-verify';
import { verifyBundle } from '../shared/platform/translog/bundle';
import type { PackageCheckers } from '../shared/platform/translog/bundle';
import { parseTrustRoot } from '../shared/platform/trust';
import type { TrustIssuer } from '../shared/platform/trust';
import type { IssuerPin } from '../shared/credentials/registry';
import { checkTreasuryPackage } from '../shared/treasury/package';
import { workflowPackageChecker } from '../shared/workflows/package';
import { printable } from '../shared/platform/text';

const usage = `usage: npm run verify -- <bundle.json> --trust <trust-root.json> [--issuers <issuers.json>]
  bundle.json      a package's bundle (GET /api/proof-workflows/bundle/{proofId}, or a governance,
                   auction or treasury package's /bundle route); - reads stdin
  trust-root.json  the trust root you pinned (GET /api/proof-workflows/trust-root)
  issuers.json     your own list of credential issuers: a JSON array of issuer key ids (64 hex) or of
                   issuers' publications; a credential proof by any other issuer is refused. Without
                   it, the trust root's issuers are the list: a credential proof whose issuer it does
                   not list for the organization, or lists revoked or out of its period at the proof's
                   time, is refused (a trust root made before issuers were listed: the organization's
                   acceptance, as its log statement says, stands).`;

/**
 * The ballot circuit's verification key, committed with the circuits: governance ballots and workflow
 * approvals are checked with it.
 */
const ballotVerificationKey = fileURLToPath(
  new URL('../circuits/artifacts/ballot.vkey.json', import.meta.url),
);

const readBallotKey = async () => JSON.parse(readFileSync(ballotVerificationKey, 'utf8')) as unknown;

/** A committed circuit's verification key, to check a bundle's against; undefined for any other name. */
async function heldKey(circuit: string): Promise<unknown> {
  const manifest = JSON.parse(
    readFileSync(fileURLToPath(new URL('../circuits/artifacts/manifest.json', import.meta.url)), 'utf8'),
  ) as { circuits?: Record<string, { vkey?: { file?: string } }> };
  const file = Object.hasOwn(manifest.circuits ?? {}, circuit)
    ? manifest.circuits![circuit]!.vkey?.file
    : undefined;
  if (!file) return undefined;
  return JSON.parse(
    readFileSync(fileURLToPath(new URL(`../circuits/artifacts/${file}`, import.meta.url)), 'utf8'),
  ) as unknown;
}

/** The setup those keys come from, as the manifest beside them states it: its powers of tau, insecure or not. */
function setupOfKeys(): { ptau: string; insecure: boolean } {
  const manifest = JSON.parse(
    readFileSync(fileURLToPath(new URL('../circuits/artifacts/manifest.json', import.meta.url)), 'utf8'),
  ) as { ptau?: { file?: unknown; insecure?: unknown } };
  return { ptau: String(manifest.ptau?.file), insecure: manifest.ptau?.insecure === true };
}

const checkersFor = (issuers?: readonly IssuerPin[]): PackageCheckers => ({
  workflow_package: workflowPackageChecker(
    readBallotKey,
    () => heldKey('credential'),
    issuers,
    () => heldKey('approval'),
  ),
  governance_package: governancePackageChecker(readBallotKey),
  auction_package: checkAuctionPackage,
  treasury_package: checkTreasuryPackage,
});

/** The issuers of an issuers file: key ids, or publications (their keyId). */
function issuerIds(value: unknown): IssuerPin[] {
  if (!Array.isArray(value)) throw new Error('verify: the issuers file is a JSON array');
  return value.map((v) => {
    const id = typeof v === 'string' ? v : (v as { keyId?: unknown } | null)?.keyId;
    if (typeof id !== 'string' || !/^[0-9a-f]{64}$/.test(id))
      throw new Error('verify: each issuer is a key id (64 hex) or a publication with one');
    return { keyId: id };
  });
}

/** The trust root's issuers, each pinned to its organization with its period and revocation. */
const trustRootPins = (listed: readonly TrustIssuer[]): IssuerPin[] =>
  listed.map((i) => ({
    keyId: i.keyId,
    acceptedBy: i.acceptedBy,
    validFrom: i.validFrom,
    validUntil: i.validUntil ?? null,
    revokedFrom: i.revokedFrom ?? null,
    roots: i.revocationRoots,
  }));

function readJson(file: string, what: string): unknown {
  try {
    return JSON.parse(readFileSync(file === '-' ? 0 : file, 'utf8')) as unknown;
  } catch (err) {
    throw new Error(`verify: cannot read the ${what} ${file} as JSON (${(err as Error).message})`);
  }
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const trustAt = argv.indexOf('--trust');
  const trustFile = trustAt >= 0 ? argv[trustAt + 1] : undefined;
  const issuersAt = argv.indexOf('--issuers');
  const issuersFile = issuersAt >= 0 ? argv[issuersAt + 1] : undefined;
  const options = [trustAt, issuersAt].filter((i) => i >= 0).flatMap((i) => [i, i + 1]);
  const rest = argv.filter((_, i) => !options.includes(i));
  if (issuersAt >= 0 && !issuersFile) {
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  if (!trustFile || rest.length !== 1) {
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  let bundle: unknown;
  let root;
  let issuers: IssuerPin[] | undefined;
  try {
    bundle = readJson(rest[0]!, 'bundle');
    root = parseTrustRoot(readJson(trustFile, 'trust root'));
    if (issuersFile) issuers = issuerIds(readJson(issuersFile, 'issuers'));
    else if (root.issuers) issuers = trustRootPins(root.issuers);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 2;
  }
  const verdict = await verifyBundle(bundle, root, checkersFor(issuers), heldKey);
  // A finding quotes the bundle (its log's origin, its package's names): escaped for the terminal.
  for (const f of verdict.findings)
    process.stdout.write(`${f.ok ? 'valid' : 'INVALID'}: ${printable(f.text)}\n`);
  const setup = setupOfKeys();
  const warnings = [
    ...(verdict.restsOnProofs && setup.insecure
      ? [
          `the zero-knowledge proofs were checked with keys from an insecure development setup (${setup.ptau}), not a published ceremony: whoever made that setup could forge them; treat this as a test, not as proof`,
        ]
      : []),
    ...verdict.warnings,
  ];
  for (const w of warnings) process.stdout.write(`WARNING: ${printable(w)}\n`);
  return verdict.ok ? 0 : 1;
}

process.exitCode = await main(process.argv.slice(2));
