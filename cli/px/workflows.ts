// `px workflow …`: proof workflows, their events (actors as commitments under the key file's salt,
// evidence as hashes), approver sets of identities, and a package's status.
import { readFileSync } from 'node:fs';
import { actorCommitment, documentHash } from '../client/crypto';
import { issuerKeyId } from '../../shared/credentials/format';
import { AppError } from '../../shared/platform/errors';
import type { CredentialDocument } from '../../shared/credentials/format';
import { revocationPath } from '../../shared/credentials/query';
import type { TermParameters } from '../../shared/credentials/query';
import { findTemplate } from '../../shared/workflows/templates';
import { UsageError } from './context';
import type { Command } from './context';

/**
 * `--param FIELD=VALUE` pairs as a query's parameters: digits a number, `LOW..HIGH` a range, `A|B|C` a
 * set, anything else (a date, an enum value) a string.
 */
function parametersOf(pairs: readonly string[]): Record<string, TermParameters> {
  const value = (v: string) => (/^\d{1,15}$/.test(v) ? Number(v) : v);
  const out: Record<string, TermParameters> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UsageError(`--param ${pair}: FIELD=VALUE`);
    const [field, v] = [pair.slice(0, at), pair.slice(at + 1)];
    if (v.includes('..')) {
      const [low, high] = v.split('..');
      out[field] = { low: value(low!), high: value(high!) };
    } else if (v.includes('|')) out[field] = { values: v.split('|').map(value) };
    else out[field] = { value: value(v) };
  }
  return out;
}

export const workflowCommands: Command[] = [
  {
    name: 'workflow prepare',
    usage:
      'workflow prepare --template NAME [--stage KEY --subject COMMITMENT --param FIELD=VALUE... [--plain-parameters]] [--out FILE]',
    run: async ({ values, noId, need, px, call, out }) => {
      noId();
      // A stage prepared for a credential proof: the applicant's subject and the query's parameters.
      const policyParameters = values.stage
        ? {
            [values.stage]: {
              credential: {
                subject: need('subject'),
                parameters: parametersOf(values.param ?? []),
                ...(values['plain-parameters'] ? { plain: true } : {}),
              },
            },
          }
        : undefined;
      out(
        await call(
          px().platform.POST('/api/proof-workflows/prepare', {
            body: { template: need('template'), ...(policyParameters ? { policyParameters } : {}) },
          }),
        ),
      );
    },
  },
  {
    name: 'workflow credential',
    usage:
      'workflow credential WORKFLOW --stage KEY --credential FILE --prepared FILE --param FIELD=VALUE... --actor NAME',
    run: async ({ values, needId, need, keys, px, call, out }) => {
      const workflowId = needId('a WORKFLOW');
      const stage = need('stage');
      const prepared = JSON.parse(readFileSync(need('prepared'), 'utf8')) as {
        proofId?: string;
        template?: string;
        policyGates?: Array<{ stage: string; index: number; salts?: Record<string, string> }>;
      };
      const gate = prepared.policyGates?.find((g) => g.stage === stage);
      const spec = findTemplate(prepared.template ?? '')?.stages[gate?.index ?? -1];
      if (!prepared.proofId || !gate?.salts || !spec?.credential)
        throw new UsageError(
          `--prepared: not the prepare answer of a workflow whose ${stage} takes a credential`,
        );
      const credential = JSON.parse(readFileSync(need('credential'), 'utf8')) as CredentialDocument;
      const params = parametersOf(values.param ?? []);
      const query = spec.credential.query.map((t) => {
        if (!params[t.field]) throw new UsageError(`--param ${t.field}=…: the value fixed at prepare`);
        return { ...t, ...params[t.field], salt: gate.salts![`${t.field}Salt`] };
      });
      // The issuer's latest revoked nonces, public; the path is made here, so nobody learns the credential.
      // An issuer that never published has no root on the log: the gate refuses its proofs by name.
      const published = px().platform.GET('/api/proof-workflows/issuers/{keyId}/revocations', {
        params: { path: { keyId: issuerKeyId(credential.proof.publicKey ?? ['0', '0']) } },
      });
      const nonces = (await published).response.status === 404 ? [] : (await call(published)).nonces;
      const { provePolicy, terminateCurves } = await import('../../shared/zk/index');
      const { localProverBackend } = await import('../../shared/zk/local-prover');
      const { stageContext } = await import('../../shared/zk/context');
      try {
        let proved;
        try {
          const revocation = await revocationPath(
            nonces,
            credential.credentialStatus?.revocationNonce ?? '0',
          );
          proved = await provePolicy(
            await localProverBackend(),
            'credential',
            { credential, query, revocation },
            undefined,
            { context: BigInt(await stageContext(prepared.proofId, gate.index)) },
          );
        } catch (err) {
          // What the circuit would refuse, refused here before proving, as the service names it.
          if (err instanceof AppError) throw new Error(`refused (${err.status} ${err.code}): ${err.message}`);
          throw err;
        }
        out(
          await call(
            px().platform.POST('/api/proof-workflows/event', {
              body: {
                workflowId,
                stage,
                action: 'attach_evidence',
                actorCommitment: actorCommitment(keys.actorSalt(), need('actor')),
                policyProof: {
                  policy: 'credential',
                  proof: proved.proof,
                  publicSignals: proved.publicSignals,
                },
              },
            }),
          ),
        );
      } finally {
        await terminateCurves();
      }
    },
  },
  {
    name: 'workflow accept-issuer',
    usage: 'workflow accept-issuer --publication FILE [--valid-from TIME] [--valid-until TIME]',
    run: async ({ values, noId, need, px, call, out }) => {
      noId();
      out(
        await call(
          px().platform.POST('/api/proof-workflows/issuers', {
            body: {
              publication: JSON.parse(readFileSync(need('publication'), 'utf8')) as Record<string, unknown>,
              ...(values['valid-from'] ? { validFrom: values['valid-from'] } : {}),
              ...(values['valid-until'] ? { validUntil: values['valid-until'] } : {}),
            },
          }),
        ),
      );
    },
  },
  {
    name: 'workflow issuer-roots',
    usage: 'workflow issuer-roots KEYID --publication FILE',
    run: async ({ needId, need, px, call, out }) =>
      out(
        await call(
          px().platform.POST('/api/proof-workflows/issuers/{keyId}/revocations', {
            params: { path: { keyId: needId('a KEYID') } },
            body: {
              publication: JSON.parse(readFileSync(need('publication'), 'utf8')) as Record<string, unknown>,
            },
          }),
        ),
      ),
  },
  {
    name: 'workflow revoke-issuer',
    usage: 'workflow revoke-issuer KEYID --from TIME',
    run: async ({ needId, need, px, call, out }) =>
      out(
        await call(
          px().platform.POST('/api/proof-workflows/issuers/{keyId}/revoke', {
            params: { path: { keyId: needId('a KEYID') } },
            body: { from: need('from') },
          }),
        ),
      ),
  },
  {
    name: 'workflow issuers',
    usage: 'workflow issuers',
    run: async ({ noId, px, call, out }) => {
      noId();
      out(await call(px().platform.GET('/api/proof-workflows/issuers')));
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
    usage:
      'workflow approvers --template NAME --stage KEY (--identity FILE | --commitment C)... [--require-credential SCHEMA --param FIELD=VALUE...]',
    run: async ({ values, noId, need, commitments, px, call, out }) => {
      noId();
      // Each approver must hold a credential of SCHEMA whose fields are these (VALUE: equal; A|B: one
      // of; LOW..HIGH: between), proven inside each approval.
      const schema = values['require-credential'];
      const terms = Object.entries(parametersOf(values.param ?? [])).map(([field, p]) => ({
        field,
        op: p.values ? ('in' as const) : p.low !== undefined ? ('between' as const) : ('eq' as const),
        ...p,
      }));
      if (schema && terms.length === 0)
        throw new UsageError('--require-credential: give what each approver’s credential shows with --param');
      out(
        await call(
          px().platform.POST('/api/proof-workflows/approver-sets', {
            body: {
              template: need('template'),
              stage: need('stage'),
              identityCommitments: await commitments(),
              ...(schema ? { credential: { schema, terms } } : {}),
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
