// Credential schemas the templates name. An issuer signs them as they are here; a schema's id is the
// hash of its canonical JSON, so a changed field is another schema.
import type { CredentialSchema } from './format';
import { SCHEMA_TYPE } from './format';

/** A credit bureau's report on an applicant: its score, debt-to-income in basis points, and when. */
export const creditReportSchema: CredentialSchema = {
  type: SCHEMA_TYPE,
  name: 'credit-report',
  version: 1,
  fields: [
    { name: 'score', type: 'integer' },
    { name: 'debtToIncome', type: 'integer' },
    { name: 'reportedAt', type: 'date' },
    { name: 'bureau', type: 'enum', values: ['equifax', 'experian', 'transunion', 'other'] },
  ],
};

/**
 * An organization's staff directory on one of its people: the role they hold, and since when. Issued
 * about an approver's identity commitment, it lets a credentialed approval say "an underwriter
 * approved" without saying who.
 */
export const staffRoleSchema: CredentialSchema = {
  type: SCHEMA_TYPE,
  name: 'staff-role',
  version: 1,
  fields: [
    {
      name: 'role',
      type: 'enum',
      values: ['underwriter', 'compliance_officer', 'treasury_signer', 'procurement', 'auditor', 'reviewer'],
    },
    { name: 'since', type: 'date' },
  ],
};

/** The schemas the service knows by name (a template's, an approver set's requirement, the CLI's). */
export const knownSchemas: Readonly<Record<string, CredentialSchema>> = Object.fromEntries(
  [creditReportSchema, staffRoleSchema].map((s) => [s.name, s]),
);
