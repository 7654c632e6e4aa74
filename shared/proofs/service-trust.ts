// Checking a package of any kind under this service's trust root, its key history: the envelope first
// (a package this service did not sign costs a signature check and nothing more), then the kind's own
// verifier, again at the time the log recorded the package when a key revoked since is what fails it.
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import { sha256Hex } from '../platform/crypto';
import type { Db } from '../platform/db/knex';
import { loggedAt, serviceTrust } from '../platform/key-history';
import type { ServiceTrust } from '../platform/key-history';
import {
  checkEnvelope,
  envelopeShape,
  packageEntryLeafHash,
  packageLeafHash,
  packageSigningMessage,
} from './envelope';
import type { Envelope, EnvelopeCheck, Reason } from './envelope';

/** How the service checks a package it is handed (a route, a page), beyond what the verifier checks. */
export interface ServiceCheck<V> {
  /**
   * The verdict when the package's signature or log proof does not hold under the trust root: the
   * verifier's other checks (the costly ones: proofs, trustees' arithmetic) are not run for a package
   * this service did not sign, so a made-up package costs a signature check and nothing more.
   */
  refused: (envelope: EnvelopeCheck) => V;
  /**
   * Remember the verdict under this name by the package's signed bytes: only the service's own packages
   * get past the signature, so the verdicts remembered are as many as the packages it made, and each is
   * worked out once per process (per key history).
   */
  memo?: string;
}

/** The envelope's members alone: enough to check the signature, whatever else the package holds. */
const envelopeOnly = z.object(envelopeShape).loose();

/** Verdicts of the service's own packages, by kind, key history and signed bytes (ServiceCheck.memo). */
const serviceVerdicts = new LRUCache<string, object>({ max: 10_000 });

/**
 * Runs a package verifier (any kind's) under this service's trust root, its key history. When a key
 * revoked since is among what fails it, it runs again with the time this service's log recorded the
 * package — the same bytes, under its proof id — which holds it if that was before the revocation.
 * With `check`, the envelope is checked first and the verifier runs only for a package this service
 * signed (and whose log proof, when it has one, holds), at most once per process for the same bytes.
 */
export async function verifyUnderServiceTrust<V extends { reasons: readonly Reason[] }>(
  db: Db,
  pkg: unknown,
  verify: (trust: ServiceTrust, opts: { loggedAt?: string }) => V | Promise<V>,
  check?: ServiceCheck<V>,
): Promise<V> {
  const trust = await serviceTrust(db);
  if (!check) return verifyWithHistory(db, pkg, trust, verify);
  const envelope = envelopeOnly.safeParse(pkg);
  if (!envelope.success)
    return check.refused({
      signatureValid: false,
      reasons: [
        {
          check: 'format',
          code: 'malformed_package',
          detail: envelope.error.issues
            .slice(0, 3)
            .map((i) => `${i.path.join('.')}: ${i.message}`)
            .join('; '),
        },
      ],
    });
  const e = envelope.data as unknown as Envelope;
  let opts: { loggedAt?: string } = {};
  let checked = checkEnvelope(e, trust);
  if (!checked.signatureValid && checked.reasons.some((r) => r.code === 'revoked')) {
    const at = await loggedAtOf(db, e);
    if (at) {
      opts = { loggedAt: at };
      checked = checkEnvelope(e, trust, opts);
    }
  }
  if (!checked.signatureValid || checked.inclusionValid === false) return check.refused(checked);
  if (!check.memo) return verify(trust, opts);
  // Every log proof that holds gives the same verdict: the key is the signed bytes, not the proof.
  const key = sha256Hex(
    [
      check.memo,
      trust.version,
      opts.loggedAt ?? '',
      e.log ? 'logged' : '',
      e.signature,
      packageSigningMessage(e as never),
    ].join('\n'),
  );
  const known = serviceVerdicts.get(key) as V | undefined;
  if (known) return known;
  const verdict = deepFreeze(await verify(trust, opts));
  serviceVerdicts.set(key, verdict);
  return verdict;
}

/** When this service's log recorded the package, if it holds exactly these bytes under its proof id. */
async function loggedAtOf(db: Db, pkg: Envelope): Promise<string | undefined> {
  if (typeof pkg.proofId !== 'string') return undefined;
  const logged = await loggedAt(db, pkg.proofId);
  // The leaf is the package's log entry, or the package itself for one logged before entries.
  let leaves: string[];
  try {
    leaves = [packageEntryLeafHash(pkg), packageLeafHash(pkg)];
  } catch {
    return undefined;
  }
  return logged && leaves.includes(logged.leafHash) ? logged.loggedAt : undefined;
}

async function verifyWithHistory<V extends { reasons: readonly Reason[] }>(
  db: Db,
  pkg: unknown,
  trust: ServiceTrust,
  verify: (trust: ServiceTrust, opts: { loggedAt?: string }) => V | Promise<V>,
): Promise<V> {
  const first = await verify(trust, {});
  if (!first.reasons.some((r) => r.code === 'revoked')) return first;
  const at = await loggedAtOf(db, pkg as Envelope);
  return at ? verify(trust, { loggedAt: at }) : first;
}

/** Frozen all the way down: what a memo hands out is shared by every later request. */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
