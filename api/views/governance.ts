// What the coordination routes (governance, treasury, auctions) share: the ids and values their requests
// name, and the key their packages are signed with.
import { z } from 'zod';
import { idPattern } from '../../shared/platform/ids';
import { DECIMAL_FIELD } from '../../shared/governance/ballot-protocol';
import { servicePublicKey } from '../../shared/proofs/seal';

export const hex64 = z.string().regex(/^[0-9a-f]{64}$/, '64 lowercase hex characters (a sha256)');
export const roomIdSchema = z.string().regex(idPattern('room'), 'a room id (room_…)');
export const proposalIdSchema = z.string().regex(idPattern('prop'), 'a proposal id (prop_…)');
export const slugSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,39}$/, 'lowercase letters, digits and dashes');
export const fieldSchema = z.string().regex(DECIMAL_FIELD, 'a BN254 field element, decimal');

/** The key packages are signed with, as an offline verifier needs it. */
export const signingKey = () => {
  const k = servicePublicKey();
  return { keyId: k.keyId, publicKey: k.publicKey };
};
