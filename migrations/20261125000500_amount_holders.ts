// Who holds each unique amount: the caller whose budget it counts against (a client network, an agent
// made before networks were recorded, a license, the operator) and its kind (`gate` for payment-gate
// requests, `public` for everyone without a paid license, `licensed`), so that one caller's open
// holds, the gate's and the public's can each be capped.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('payment_amounts', (t) => {
    /** The budget owner (`net:<tag>`, `agent:<id>`, `license:<id>`, `operator`); never an address. */
    t.text('holder');
    /** gate | public | licensed. */
    t.text('holder_kind');
  });
  // Holds made before holders were recorded count as their own holder, in the kind their owner says.
  await knex.raw(`update payment_amounts set holder = 'owner:' || owner,
    holder_kind = case when left(owner, 5) = 'gate_' then 'gate' else 'public' end`);
  await knex.raw(`alter table payment_amounts
    alter column holder set not null,
    alter column holder_kind set not null,
    add constraint payment_amounts_holder_kind_check check (holder_kind in ('gate', 'public', 'licensed'))`);
  await knex.raw('create index payment_amounts_holder on payment_amounts (network, token, pay_to, holder)');
  await knex.raw(
    `create index payment_amounts_gate on payment_amounts (network, token, pay_to) where holder_kind = 'gate'`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists payment_amounts_gate');
  await knex.raw('drop index if exists payment_amounts_holder');
  // Dropping the column drops its check constraint.
  await knex.schema.alterTable('payment_amounts', (t) => {
    t.dropColumn('holder_kind');
    t.dropColumn('holder');
  });
}
