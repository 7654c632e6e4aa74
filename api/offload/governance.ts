// A governance package checked as the service checks what it is handed (the verify route, the verify
// page, a proposal's page): its signature first, then, for a package this service signed, every check in
// the verify pool, each package's verdict worked out once per process.
import type { Request } from 'express';
import { LRUCache } from 'lru-cache';
import { governanceFinding, refusedGovernanceVerdict } from '../../shared/governance/package-verify';
import type { GovernanceVerdict } from '../../shared/governance/package-verify';
import { canonicalJson } from '../../shared/platform/canonical';
import { sha256Hex } from '../../shared/platform/crypto';
import type { Db } from '../../shared/platform/db/knex';
import type { PackageChecker, PackageFinding } from '../../shared/platform/translog/bundle';
import { serviceTrust } from '../../shared/platform/key-history';
import type { ServiceTrust } from '../../shared/platform/key-history';
import { verifyUnderServiceTrust } from '../../shared/proofs/service-trust';
import type { Principal } from '../http/auth';
import { offload } from './pool';

export interface GovernanceCheck {
  verdict: GovernanceVerdict;
  /** The trust root the verdict was reached under, and when the log recorded the package if that counted. */
  trust: ServiceTrust & { loggedAt?: string };
}

export async function verifyGovernanceAsService(
  db: Db,
  pkg: unknown,
  caller: { req: Request; auth?: Principal | null },
): Promise<GovernanceCheck> {
  let used: GovernanceCheck['trust'] | undefined;
  const verdict = await verifyUnderServiceTrust(
    db,
    pkg,
    (trust, opts) => {
      used = { ...trust, ...opts };
      return offload('governance.verify', { pkg, keys: used }, caller);
    },
    { refused: refusedGovernanceVerdict, memo: 'governance' },
  );
  // A refused or remembered verdict ran no verifier here: the trust root is the current one.
  return { verdict, trust: used ?? (await serviceTrust(db)) };
}

/** Findings of bundles' governance packages, by the key that signed them and their signed bytes. */
const bundleFindings = new LRUCache<string, PackageFinding>({ max: 1_000 });

/**
 * The bundle verifier's governance check as the verify page runs it: in the verify pool, once per
 * package. A bundle reaches it only after its checkpoint, witnesses and log entry held (a package this
 * service logged), so what is remembered is as many as the packages the log holds.
 */
export const pooledGovernanceChecker =
  (caller: { req: Request; auth?: Principal | null }): PackageChecker =>
  async (pkg, keys) => {
    const key = sha256Hex(`${keys.publicKey}\n${canonicalJson(pkg)}`);
    const known = bundleFindings.get(key);
    if (known) return known;
    const finding = governanceFinding(pkg, await offload('governance.verify', { pkg, keys }, caller));
    bundleFindings.set(key, finding);
    return finding;
  };
