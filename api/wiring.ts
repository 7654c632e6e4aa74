// What the product lines plug into the web process besides their routes (api/tables.ts), listed once:
// the keys they issue, the readiness checks of what they need, and the verifiers of the packages they
// publish (the verify page checks pasted bundles with them). createApp wires the first two.
import { checkAuctionPackage } from '../shared/auctions/package';
import { deliverySealedColumns } from '../shared/deliveries/secrets';
import { ballotSealedColumns } from '../shared/governance/ballot-key';
import { developmentSettlementIssues } from '../shared/payments/development';
import { env } from '../shared/platform/env';
import type { SealedColumn } from '../shared/platform/sealed-columns';
import { sealedKeyCheck } from '../shared/platform/startup-checks';
import type { DatabaseCheck } from '../shared/platform/startup-checks';
import { resolveApiKey } from '../shared/exchange/agents';
import { BALLOT_CIRCUIT } from '../shared/governance/ballot-protocol';
import { governancePackageChecker } from '../shared/governance/package-verify';
import { resolveOrganizationKey } from '../shared/licensing/keys';
import { resolveLicenseToken } from '../shared/licensing/licenses';
import { resolveOperatorKey } from '../shared/licensing/operators';
import type { PackageCheckers } from '../shared/platform/translog/bundle';
import { chainNetworkReadiness, chainReadiness } from '../shared/providers/probes';
import { checkTreasuryPackage } from '../shared/treasury/package';
import { workflowPackageChecker } from '../shared/workflows/package';
import { CREDENTIAL_CIRCUIT } from '../shared/credentials/query';
import { CREDENTIALED_APPROVAL_CIRCUIT } from '../shared/zk/anonymity';
import { loadVerificationKey } from '../shared/zk/verify';
import { circuitReadiness } from '../shared/zk/setup';
import type { KeyResolvers } from './http/auth';
import { platformReadinessChecks } from './http/readiness';
import type { ReadinessChecks } from './http/readiness';

/** The Bearer keys the API resolves to a principal, by prefix (the bootstrap operator token is checked apart). */
export const keyResolvers: KeyResolvers = {
  // An agent's API key, issued once by registerAgent.
  ak_: async (token, deps) => {
    const found = await resolveApiKey(deps.db, token);
    return found ? { kind: 'agent', ...found } : null;
  },
  // A license key, from a confirmed checkout or a TRIAL.
  lk_: (token, deps) => resolveLicenseToken(deps.db, token),
  // An organization's API key: its license, with the key's scopes.
  rk_: (token, deps) => resolveOrganizationKey(deps.db, token),
  // A named operator key, with its role (issued by an admin operator: npm run admin -- operators issue).
  opk_: async (token, deps) => {
    const found = await resolveOperatorKey(deps.db, token);
    return found ? { kind: 'operator', ...found } : null;
  },
};

/** What /api/v1/readiness checks, in the order it lists them: the platform's, then the lines'. */
export const readinessChecks: ReadinessChecks = [
  ...platformReadinessChecks,
  // The web process verifies policy proofs: their artifacts must match their manifest.
  ['circuitArtifacts', () => circuitReadiness()],
  // Payments are verified on chain: every configured chain endpoint must answer.
  ['chainAdapters', () => chainReadiness()],
  // ... and serve the network of the assets they settle (a devnet node behind a mainnet asset is not ready).
  ['chainNetworks', () => chainNetworkReadiness()],
];

/** Every column sealed under SEALING_KEY or BALLOT_KEY (workers/startup.ts lists the same). */
export const sealedColumns: readonly SealedColumn[] = [...deliverySealedColumns, ...ballotSealedColumns];

/** What a production web process checks of the database before it listens. */
export const databaseChecks: readonly DatabaseCheck[] = [
  sealedKeyCheck(sealedColumns),
  (db) => developmentSettlementIssues(db, env),
];

/** Each published package kind's offline verifier, for bundles (cli/verify.ts lists the same). */
export const packageCheckers: PackageCheckers = {
  workflow_package: workflowPackageChecker(
    () => loadVerificationKey(BALLOT_CIRCUIT),
    () => loadVerificationKey(CREDENTIAL_CIRCUIT),
    undefined,
    () => loadVerificationKey(CREDENTIALED_APPROVAL_CIRCUIT),
  ),
  governance_package: governancePackageChecker(() => loadVerificationKey(BALLOT_CIRCUIT)),
  auction_package: checkAuctionPackage,
  treasury_package: checkTreasuryPackage,
};
