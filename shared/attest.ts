// Timestamp attestations: the service signs (digest, time, job) with its ed25519 key; anyone verifies offline.
import { canonicalJson } from './canonical';
import { verifyEd25519 } from './crypto';
import { serviceSigningKey } from './keys';

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

/** Offline check with the public key published by /api/health and /api/services. */
export function verifyTimestamp(a: TimestampAttestation, publicKey: string): boolean {
  if (a.type !== ATTESTATION_TYPE || a.algorithm !== 'sha256') return false;
  return verifyEd25519(publicKey, attestationMessage(a), a.signature);
}
