// Where workflow packages and log tree heads meet the service's own key; everything else in this
// folder takes a signer, so the verifier side loads no configuration.
import { serviceSigningKey } from '../keys';
import { signTreeHead } from '../translog/treeHead';
import type { SignedTreeHead } from '../translog/treeHead';
import { buildWorkflowPackage } from './package';
import type { BuildPackageInput, WorkflowPackage } from './package';

/** Builds and signs a closed workflow's proof package with the service key. */
export const sealWorkflowPackage = (input: BuildPackageInput): WorkflowPackage =>
  buildWorkflowPackage(input, serviceSigningKey());

/** Signs the log's tree head with the service key. */
export const signServiceTreeHead = (head: {
  treeSize: number;
  rootHash: Uint8Array | string;
  timestamp: Date | string;
}): SignedTreeHead => signTreeHead(head, serviceSigningKey());

/** What a verifier needs to check packages and tree heads from this service. */
export const servicePublicKey = (): { keyId: string; publicKey: string } => {
  const key = serviceSigningKey();
  return { keyId: key.keyId, publicKey: key.publicKey };
};
