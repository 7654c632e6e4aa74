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
