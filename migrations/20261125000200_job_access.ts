// Who may read or act on a job. A job id names it; it no longer opens it. Its creator's credential does
// (the agent key, recorded as agent_id; the license key, recorded here as license_id), and so does the
// job's capability: a secret returned once when the job is made, of which only the SHA-256 is kept.
// An x402 client that paid the job gets one of its own in the reply to the paid request.
// Jobs made before this have no capability: only the operator and a creating agent can open them.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    /** sha256 (hex) of the job's capability (jt_…), given to its creator. */
    t.text('access_hash');
    /** sha256 (hex) of the capability given to the request that settled an x402 payment of the job. */
    t.text('payer_access_hash');
    /** The license whose key created the job. */
    t.text('license_id').references('licenses.id');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.dropColumn('license_id');
    t.dropColumn('payer_access_hash');
    t.dropColumn('access_hash');
  });
}
