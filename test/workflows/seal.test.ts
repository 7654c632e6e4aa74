// The service-key wiring: a package sealed with the configured key verifies against its published key.
import { describe, expect, it } from 'vitest';
import { MemoryLog } from '../../shared/translog/memoryLog';
import { verifyTreeHead } from '../../shared/translog/treeHead';
import { verifyPackage } from '../../shared/workflows/package';
import { findTemplate } from '../../shared/workflows/templates';
import type { WorkflowTemplate } from '../../shared/workflows/templates';
import { completeWorkflow } from './helpers';

describe('sealing with the service key', () => {
  it('signs packages and tree heads that verify against servicePublicKey()', async () => {
    const { sealWorkflowPackage, servicePublicKey, signServiceTreeHead } =
      await import('../../shared/workflows/seal');
    const template = findTemplate('Treasury Approval') as WorkflowTemplate;
    const run = completeWorkflow(template, 'prf_sealed');
    const pkg = sealWorkflowPackage({
      template,
      proofId: 'prf_sealed',
      stages: run.stages,
      issuedAt: new Date(),
    });
    const { publicKey, keyId } = servicePublicKey();
    expect(pkg.issuer.keyId).toBe(keyId);
    expect(verifyPackage(pkg, { publicKey })).toMatchObject({
      notAltered: true,
      completed: true,
      signatureValid: true,
    });

    const log = new MemoryLog();
    log.append(Buffer.from('entry'));
    const head = signServiceTreeHead({ treeSize: log.size, rootHash: log.root(), timestamp: new Date() });
    expect(verifyTreeHead(head, publicKey)).toBe(true);
  });
});
