// `px workflow …`: proof workflows, their events (actors as commitments under the key file's salt,
// evidence as hashes), approver sets of identities, and a package's status.
import { readFileSync } from 'node:fs';
import { actorCommitment, documentHash } from '../client/crypto';
import { UsageError } from './context';
import type { Command } from './context';

export const workflowCommands: Command[] = [
  {
    name: 'workflow prepare',
    usage: 'workflow prepare --template NAME',
    run: async ({ noId, need, px, call, out }) => {
      noId();
      out(
        await call(
          px().platform.POST('/api/proof-workflows/prepare', { body: { template: need('template') } }),
        ),
      );
    },
  },
  {
    name: 'workflow event',
    usage:
      'workflow event WORKFLOW --stage KEY --action ACTION --actor NAME [--evidence TEXT | --evidence-file FILE]',
    run: async ({ values, needId, need, keys, px, call, out }) => {
      const workflowId = needId('a WORKFLOW');
      if (values.evidence !== undefined && values['evidence-file'] !== undefined)
        throw new UsageError('give --evidence or --evidence-file, not both');
      const evidence =
        values.evidence !== undefined
          ? documentHash(values.evidence)
          : values['evidence-file'] !== undefined
            ? documentHash(readFileSync(values['evidence-file']))
            : undefined;
      out(
        await call(
          px().platform.POST('/api/proof-workflows/event', {
            body: {
              workflowId,
              stage: need('stage'),
              action: need('action') as 'submit',
              actorCommitment: actorCommitment(keys.actorSalt(), need('actor')),
              ...(evidence ? { evidenceHash: evidence } : {}),
            },
          }),
        ),
      );
    },
  },
  {
    name: 'workflow approvers',
    usage: 'workflow approvers --template NAME --stage KEY (--identity FILE | --commitment C)...',
    run: async ({ noId, need, commitments, px, call, out }) => {
      noId();
      out(
        await call(
          px().platform.POST('/api/proof-workflows/approver-sets', {
            body: {
              template: need('template'),
              stage: need('stage'),
              identityCommitments: await commitments(),
            },
          }),
        ),
      );
    },
  },
  {
    name: 'workflow status',
    usage: 'workflow status PROOF',
    run: async ({ needId, px, call, out }) =>
      out(
        await call(
          px().platform.GET('/api/proof-workflows/status', {
            params: { query: { proofId: needId('a PROOF') } },
          }),
        ),
      ),
  },
];
