// submitPayment in one round trip: a function that locks the job, takes the transfer's lock, and records
// the payment or answers why not, each of its statements with a snapshot of its own (a volatile
// PL/pgSQL function takes one per statement), so the reads after the locks see what the locks' previous
// holders committed. Called outside a transaction it commits with its statement; shared/payments/submit.ts
// says what it answers and when it is called inside one.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create function submit_payment(
      p_job_id text,
      p_asset text,
      p_tx_ref text,
      p_reference text,
      p_now timestamptz,
      p_late_ms double precision,
      p_operator boolean,
      p_agent_id text,
      p_license_id text,
      p_token_hash text,
      p_with_deliveries boolean,
      p_id text,
      p_payer text,
      p_tx_key text,
      out verdict text,
      out job_status text,
      out job_quotes json,
      out job_subscriptions json,
      out payment payments
    ) language plpgsql volatile as $fn$
    declare
      j_agent text;
      j_license text;
      j_access text;
      j_payer_access text;
      q_id text;
      q_network text;
      q_expires timestamptz;
    begin
      -- The job's lock: every submission for this job waits here, whatever its transaction.
      select status, agent_id, license_id, access_hash, payer_access_hash
        into job_status, j_agent, j_license, j_access, j_payer_access
        from jobs where id = p_job_id for update;
      -- Who may act on the job, as shared/jobs/access.ts mayAccessJob says (the token as its hash).
      -- Each comparison is true or false, never null: a null column (an anonymous job has no agent)
      -- must refuse, and null would not.
      if not found or not (
           p_operator
           or coalesce(j_agent = p_agent_id, false)
           or coalesce(j_license = p_license_id, false)
           or coalesce(j_access = p_token_hash, false)
           or coalesce(j_payer_access = p_token_hash, false)
         ) then
        verdict := 'not_found';
        job_status := null;
        return;
      end if;
      -- The job's quotes, and its quote in the asset (quotes are written with the job and never after).
      select coalesce(json_agg(json_build_object('id', id, 'asset', asset, 'network', network,
                                                 'expires_at', expires_at) order by id), '[]'::json),
             max(id) filter (where asset = p_asset),
             max(network) filter (where asset = p_asset),
             max(expires_at) filter (where asset = p_asset)
        into job_quotes, q_id, q_network, q_expires
        from quotes where job_id = p_job_id;
      -- The lock that serialises submissions of one transfer, after the job's (the order every holder
      -- of both takes them in), and before the checks: a refusal holds it until its statement ends.
      if q_id is not null then
        perform pg_advisory_xact_lock(hashtextextended(q_network || '|' || p_tx_ref, 0));
      end if;
      -- From here each statement's snapshot follows both locks. The same transaction submitted again
      -- for the same job answers the payment already recorded, before any refusal.
      select * into payment from payments
        where job_id = p_job_id and asset = p_asset and tx_ref = p_tx_ref
        order by created_at desc limit 1;
      if found then
        verdict := 'recorded';
        return;
      end if;
      verdict := case
        when json_array_length(job_quotes) = 0 then 'payment_not_required'
        when job_status not in ('awaiting_payment', 'expired') then 'job_not_awaiting_payment'
        when q_id is null then 'asset_not_quoted'
        when p_reference is not null and p_reference <> q_id then 'unknown_reference'
        when p_now > q_expires + p_late_ms * interval '1 millisecond' then 'quote_expired'
        when exists (select 1 from payment_claims where chain = q_network and tx_ref = p_tx_ref)
          then 'payment_already_claimed'
      end;
      if verdict is not null then
        return;
      end if;
      -- A job with a webhook hears of the payment in the payment's transaction: the caller runs this
      -- again inside one, and writes the delivery there.
      if exists (select 1 from job_webhooks where job_id = p_job_id and format <> 'a2a') then
        if not p_with_deliveries then
          verdict := 'subscribed';
          return;
        end if;
        select coalesce(json_agg(s), '[]'::json) into job_subscriptions
          from (select job_id, url, job_url, agent_id, last_event_id::text as last_event_id, active, format
                  from job_webhooks where job_id = p_job_id) s;
      end if;
      insert into payments (id, job_id, quote_id, asset, chain, tx_ref, payer, tx_key, status,
                            created_at, updated_at)
        values (p_id, p_job_id, q_id, p_asset, q_network, p_tx_ref, p_payer, p_tx_key, 'pending',
                p_now, p_now)
        returning * into payment;
      verdict := 'created';
    end
    $fn$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function submit_payment');
}
