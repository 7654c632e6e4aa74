// Where packages meet the service's own keys; everything else in this folder takes a signer or a trust
// root, so the verifier side loads no configuration.
import { serviceSigningKey } from '../platform/keys';

/** What a verifier needs to check packages from this service: the key that signs them. */
export const servicePublicKey = (): { keyId: string; publicKey: string } => {
  const key = serviceSigningKey();
  return { keyId: key.keyId, publicKey: key.publicKey };
};
