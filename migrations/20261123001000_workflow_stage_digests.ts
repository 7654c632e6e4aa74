// What the workflow rules need of a stage's entries, kept on the stage row so an event is decided
// without reading the trail back: the approvers that count now (distinct, since the last change
// request, in order) and whether the stage holds any evidence and any verified blind policy proof.
// The chain head and length were kept on the workflow row from the start (chain_head, entry_count).
// Existing stages are backfilled from their entries.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workflow_stages', (t) => {
    t.specificType('approvers', 'text[]').notNullable().defaultTo('{}');
    t.boolean('has_evidence').notNullable().defaultTo(false);
    t.boolean('policy_evidence').notNullable().defaultTo(false);
  });
  await knex.raw(`
    update workflow_stages s set
      approvers = coalesce((
        select array_agg(a.actor_commitment order by a.first_seq)
        from (
          select e.actor_commitment, min(e.seq) as first_seq
          from audit_entries e
          where e.workflow_id = s.workflow_id and e.stage = s.stage and e.action = 'approve'
            and e.seq > coalesce((
              select max(r.seq) from audit_entries r
              where r.workflow_id = s.workflow_id and r.stage = s.stage and r.action = 'request_changes'
            ), -1)
          group by e.actor_commitment
        ) a
      ), '{}'),
      has_evidence = exists (
        select 1 from audit_entries e
        where e.workflow_id = s.workflow_id and e.stage = s.stage and e.evidence_commitment is not null
      ),
      policy_evidence = exists (
        select 1 from audit_entries e
        where e.workflow_id = s.workflow_id and e.stage = s.stage and e.evidence_commitment is not null
          and e.evidence_kind = 'blind_policy_proof'
      )
    where exists (select 1 from audit_entries e where e.workflow_id = s.workflow_id and e.stage = s.stage)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('workflow_stages', (t) => {
    t.dropColumn('policy_evidence');
    t.dropColumn('has_evidence');
    t.dropColumn('approvers');
  });
}
