// The issuer's command line: a key, credentials signed with it, revocations, and what it publishes. It
// runs on the issuer's machine and needs nothing of the service (docs/credentials.md).
//   npm run px -- issuer keys --name "Acme Credit Bureau" --out issuer.key.json
//   npm run px -- issuer issue --key issuer.key.json --schema credit-report.json --subject C \
//       --valid-until 2027-06-01T00:00:00Z --field score=742 --field debtToIncome=31 [--out cred.json]
//   npm run px -- issuer revoke --key issuer.key.json --revocations revoked.json --nonce N
//   npm run px -- issuer publish --key issuer.key.json [--revocations revoked.json] [--schema FILE]...
//   npm run px -- issuer check cred.json
// `main(argv, io)` runs in process (`px issuer …` calls it); this file is also its command line.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { checkCredential, credentialSchemaSchema } from '../shared/credentials/format';
import type { CredentialSchema } from '../shared/credentials/format';
import {
  emptyRevocations,
  issueCredential,
  issuerPublication,
  newIssuerKey,
  readIssuerKey,
  revocationRoot,
  revocationsSchema,
  revoke,
} from '../shared/credentials/issuer';
import type { Revocations } from '../shared/credentials/issuer';
import { revocationPath } from '../shared/credentials/query';
import { knownSchemas } from '../shared/credentials/schemas';
import { commandLine } from './io';
import type { Io } from './io';
import { exitCode, output, printJson, requireOption } from './member';

const usage = `usage:
  npm run px -- issuer keys --name NAME [--out FILE]
      Makes an issuer key (BabyJubjub, EdDSA-Poseidon). The file holds the private key: keep it here.
  npm run px -- issuer issue --key FILE --schema FILE --subject COMMITMENT --valid-until TIME
      [--valid-from TIME] [--nonce N] --field NAME=VALUE... [--out FILE]
      Signs a credential (W3C VC 2.0) about the subject's commitment. Integer fields are digits; dates
      and times ISO 8601 with a zone; enum fields one of the schema's values; strings as they are.
  npm run px -- issuer revoke --key FILE --revocations FILE --nonce N
      Revokes a credential by its revocation nonce; prints the new revocation root.
  npm run px -- issuer publish --key FILE [--revocations FILE] [--schema FILE]... [--out FILE]
      What the issuer publishes: its key, the schemas it signs, its revocation root and when.
  npm run px -- issuer check CREDENTIAL
      Checks a credential on its own: ids, claim hash, signature (not who the issuer is).
  npm run px -- issuer schema NAME [--out FILE]
      A schema the templates name, as an issuer signs it (credit-report).
  npm run px -- issuer path CREDENTIAL --published FILE [--out FILE]
      The credential's non-membership path in the issuer's revocation tree, from the nonces its
      publication lists (or GET /api/proof-workflows/issuers/{keyId}/revocations): what a proof takes,
      made here so that no one learns which credential it is for.`;

const options = {
  name: { type: 'string' },
  out: { type: 'string' },
  key: { type: 'string' },
  schema: { type: 'string', multiple: true },
  subject: { type: 'string' },
  'valid-from': { type: 'string' },
  'valid-until': { type: 'string' },
  nonce: { type: 'string' },
  field: { type: 'string', multiple: true },
  revocations: { type: 'string' },
  published: { type: 'string' },
  help: { type: 'boolean' },
} as const;

/** The schemas the templates name, by name. */

/** The revoked nonces of a publication, or of the revocations route's answer. */
function publishedNonces(value: unknown): string[] {
  const v = value as { revocation?: { nonces?: unknown }; nonces?: unknown } | null;
  const nonces = v?.revocation?.nonces ?? v?.nonces;
  if (!Array.isArray(nonces) || nonces.some((n) => typeof n !== 'string'))
    throw new Error('the published file lists no revoked nonces (revocation.nonces, or nonces)');
  return nonces as string[];
}

const readJson = (path: string): unknown => JSON.parse(readFileSync(path, 'utf8')) as unknown;

function readSchema(path: string): CredentialSchema {
  const parsed = credentialSchemaSchema.safeParse(readJson(path));
  if (!parsed.success)
    throw new Error(
      `${path} is not a credential schema: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  return parsed.data;
}

/** `NAME=VALUE` pairs as the schema types them: integers as numbers, the rest as strings. */
function fieldsOf(schema: CredentialSchema, pairs: readonly string[]): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new Error(`--field ${pair}: NAME=VALUE`);
    const name = pair.slice(0, at);
    const value = pair.slice(at + 1);
    const field = schema.fields.find((f) => f.name === name);
    if (!field)
      throw new Error(
        `--field ${name}: ${schema.name} has no such field (${schema.fields.map((f) => f.name).join(', ')})`,
      );
    if (field.type === 'integer' && !/^\d{1,16}$/.test(value)) throw new Error(`--field ${name}: digits`);
    fields[name] = field.type === 'integer' ? Number(value) : value;
  }
  return fields;
}

function readRevocations(path: string, keyId: string): Revocations {
  if (!existsSync(path)) return emptyRevocations(keyId);
  const state = revocationsSchema.parse(readJson(path));
  if (state.keyId !== keyId) throw new Error(`${path} holds another key's revocations`);
  return state;
}

async function run(argv: string[], io: Io): Promise<void> {
  const { positionals, values } = parseArgs({ args: argv, allowPositionals: true, options });
  const need = (name: keyof typeof values): string => requireOption(values, name, usage);
  const key = async () => readIssuerKey(readJson(need('key')));
  const command = positionals[0];
  if (values.help || !command) {
    io.stdout.write(`${usage}\n`);
    return;
  }
  switch (command) {
    case 'keys': {
      const made = await newIssuerKey(need('name'));
      if (values.out) {
        if (existsSync(values.out)) throw new Error(`${values.out} exists; not overwriting an issuer key.`);
        writeFileSync(values.out, `${JSON.stringify(made, null, 2)}\n`, { mode: 0o600 });
      }
      const { privateKey: _p, ...pub } = made;
      printJson(io.stdout, pub);
      if (!values.out) io.stderr.write('no --out: the key was not kept\n');
      return;
    }
    case 'issue': {
      const [schemaPath, ...more] = values.schema ?? [];
      if (!schemaPath || more.length) throw new Error(`give one --schema FILE.\n\n${usage}`);
      const schema = readSchema(schemaPath);
      const doc = await issueCredential(await key(), {
        schema,
        subject: need('subject'),
        validFrom: values['valid-from'] ?? new Date().toISOString(),
        validUntil: need('valid-until'),
        ...(values.nonce ? { revocationNonce: values.nonce } : {}),
        fields: fieldsOf(schema, values.field ?? []),
      });
      output(io.stdout, values.out, doc);
      return;
    }
    case 'revoke': {
      const k = await key();
      const path = need('revocations');
      const state = revoke(readRevocations(path, k.keyId), need('nonce'), new Date());
      writeFileSync(path, `${JSON.stringify(state, null, 2)}\n`);
      printJson(io.stdout, {
        keyId: k.keyId,
        revoked: state.revoked.length,
        root: await revocationRoot(state),
      });
      return;
    }
    case 'publish': {
      const k = await key();
      const state = values.revocations
        ? readRevocations(values.revocations, k.keyId)
        : emptyRevocations(k.keyId);
      output(
        io.stdout,
        values.out,
        await issuerPublication(k, state, (values.schema ?? []).map(readSchema), new Date()),
      );
      return;
    }
    case 'check': {
      const file = positionals[1];
      if (!file) throw new Error(`give the credential file.\n\n${usage}`);
      const checked = await checkCredential(readJson(file));
      printJson(io.stdout, { ok: checked.ok, keyId: checked.keyId, problems: checked.problems });
      if (!checked.ok) throw new Error(`the credential does not hold: ${checked.problems.join('; ')}`);
      return;
    }
    case 'schema': {
      const name = positionals[1];
      const schema = name ? knownSchemas[name] : undefined;
      if (!schema) throw new Error(`give a schema name: ${Object.keys(knownSchemas).join(', ')}`);
      output(io.stdout, values.out, schema);
      return;
    }
    case 'path': {
      const file = positionals[1];
      if (!file) throw new Error(`give the credential file.\n\n${usage}`);
      const checked = await checkCredential(readJson(file));
      if (!checked.ok || !checked.claim)
        throw new Error(`the credential does not hold: ${checked.problems.join('; ')}`);
      const path = await revocationPath(
        publishedNonces(readJson(need('published'))),
        checked.claim.revocationNonce,
      );
      output(io.stdout, values.out, path);
      return;
    }
    default:
      throw new Error(`unknown command ${command}\n\n${usage}`);
  }
}

/** Runs one command line; its exit code (1 for a refusal or a mistake, its message on stderr). */
export const main = (argv: string[], io: Io): Promise<number> => exitCode(io, () => run(argv, io));

// The command line: this process's arguments, variables and streams, and its exit code.
if (import.meta.url === `file://${process.argv[1]}`) await commandLine(main);
