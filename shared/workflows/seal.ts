// Where workflow packages meet the service's own keys; everything else in this folder takes a signer or
// a public key, so the verifier side loads no configuration.
import { serviceSigningKey } from '../platform/keys';
import { buildWorkflowPackage } from './package';
import type { BuildPackageInput, WorkflowPackage } from './package';

/** Builds and signs a closed workflow's proof package with the service key. */
export const sealWorkflowPackage = (input: BuildPackageInput): WorkflowPackage =>
  buildWorkflowPackage(input, serviceSigningKey());
