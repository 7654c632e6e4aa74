// The key wiring: a package sealed with the configured service key verifies against its published key,
// and the log's tree heads against the log key, which is another key.
import { describe, expect, it } from 'vitest';
import { MemoryLog } from '../../shared/platform/translog/memory-log';
import { signTreeHead, verifyTreeHead } from '../../shared/platform/translog/tree-head';
import { verifyPackage } from '../../shared/workflows/package';
import { findTemplate } from '../../shared/workflows/templates';
import type { WorkflowTemplate } from '../../shared/workflows/templates';
import { completeWorkflow } from './helpers';

describe('sealing with the service key', () => {
  it('signs packages that verify against servicePublicKey(), tree heads against the log key', async () => {
    const { sealWorkflowPackage } = await import('../../shared/workflows/seal');
    const { servicePublicKey } = await import('../../shared/proofs/seal');
    const { logSigningKey } = await import('../../shared/platform/keys');
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
    const head = signTreeHead(
      { treeSize: log.size, rootHash: log.root(), timestamp: new Date() },
      logSigningKey(),
    );
    expect(logSigningKey().publicKey).not.toBe(publicKey);
    expect(verifyTreeHead(head, logSigningKey().publicKey)).toBe(true);
    expect(verifyTreeHead(head, publicKey)).toBe(false);
  });
});
