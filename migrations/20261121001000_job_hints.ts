// Job change hints move from a Postgres NOTIFY trigger to Redis publish: NOTIFY takes a global lock at
// every commit and cost about a quarter of end-to-end job throughput (bench:jobs, BENCH_NO_NOTIFY).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    'drop trigger if exists job_events_notify on job_events; drop function if exists job_events_notify()',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    create function job_events_notify() returns trigger language plpgsql as $$
    begin
      perform pg_notify('job_events', new.job_id);
      return new;
    end $$;
    create trigger job_events_notify after insert on job_events
      for each row execute function job_events_notify();
  `);
}
