// Timestamp attestations: the service signs (digest, time, job) with its ed25519 key; anyone verifies offline
// with the trust root.
import { canonicalJson } from '../platform/canonical';
import { asTrust, verifySignedBy } from '../platform/trust';
import type { SignatureVerdict, Trust } from '../platform/trust';
import { serviceSigningKey } from '../platform/keys';

export const ATTESTATION_TYPE = 'proof-exchange.attest.timestamp/v1';

export interface TimestampAttestation {
  type: typeof ATTESTATION_TYPE;
  algorithm: 'sha256';
  digest: string;
  time: string;
  jobId: string;
  keyId: string;
  signature: string;
}

/** The exact bytes the signature covers: canonical JSON of every field but the signature. */
export function attestationMessage(a: Omit<TimestampAttestation, 'signature'>): string {
  return canonicalJson({
    type: a.type,
    algorithm: a.algorithm,
    digest: a.digest,
    time: a.time,
    jobId: a.jobId,
    keyId: a.keyId,
  });
}

export function signTimestamp(digest: string, jobId: string, now = new Date()): TimestampAttestation {
  const key = serviceSigningKey();
  const body = {
    type: ATTESTATION_TYPE as typeof ATTESTATION_TYPE,
    algorithm: 'sha256' as const,
    digest: digest.toLowerCase(),
    time: now.toISOString(),
    jobId,
    keyId: key.keyId,
  };
  return { ...body, signature: key.sign(attestationMessage(body)) };
}

/**
 * Offline check under the key a trust root lists for it (role `attestation`, valid at its time), or the
 * bare public key published by /api/health and /api/services.
 */
export function checkTimestamp(a: TimestampAttestation, trust: Trust, loggedAt?: string): SignatureVerdict {
  if (a?.type !== ATTESTATION_TYPE || a.algorithm !== 'sha256')
    return { ok: false, reason: 'bad_signature', detail: 'Not a timestamp attestation.' };
  return verifySignedBy(
    asTrust(trust),
    { keyId: a.keyId, role: 'attestation', signedAt: a.time, loggedAt },
    attestationMessage(a),
    a.signature,
  );
}

export const verifyTimestamp = (a: TimestampAttestation, trust: Trust, loggedAt?: string): boolean =>
  checkTimestamp(a, trust, loggedAt).ok;
