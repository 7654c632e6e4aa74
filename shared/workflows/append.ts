// Appending workflow events without reading the trail back. A workflow's decision state lives on its
// rows (chain head and length on the workflow, a digest per stage); the events waiting for one workflow
// are decided together against that state, and written by one statement that advances the head only if
// it is still the head they were decided on (compare-and-set on the workflow row, whose row lock
// orders every writer). The state a batch leaves is kept in memory for the next batch, so an event
// usually costs that one statement; a lost race, a stale copy or a closing stage reads the rows again.
import type { Knex } from 'knex';
import { LRUCache } from 'lru-cache';
import { MicroBatch } from '../platform/batch';
import { canonicalJson } from '../platform/canonical';
import { sha256Hex } from '../platform/crypto';
import type { Db } from '../platform/db/knex';
import { AppError, notFound } from '../platform/errors';
import { isClosed, newEvidenceSalt } from './chain';
import { StageTrailNeeded, applyEventToState, currentStageIndex, initialState } from './engine';
import type { ChainState, StageState, StateTransition, WorkflowContext } from './engine';
import { claimPolicyProof } from './policy-gate';
import type { AcceptedPolicyProof } from './policy-gate';
import { stageRecordEntry } from './records';
import type { ChainedEntry, EvidenceKind, StageRecord, WorkflowEvent, WorkflowStatus } from './records';
import { servicePublicKey } from '../proofs/seal';
import { findTemplate } from './templates';
import type { WorkflowTemplate } from './templates';

type Conn = Db | Knex.Transaction;

/** The most events one batch decides and writes. */
const MAX_BATCH = 256;
/** Lost compare-and-sets before a batch takes the row lock first (then it cannot lose). */
const OPTIMISTIC_ATTEMPTS = 2;
/** The most workflows one statement writes. */
const MAX_WORKFLOWS_PER_WRITE = 100;
/** Workflows whose state one process keeps between batches. */
const CACHED_HEADS = 10_000;

export interface Principal {
  owner: string;
  operator: boolean;
}

/** A policy proof that passed its stage's gate (checked before the event is queued). */
export interface GatedProof {
  accepted: AcceptedPolicyProof;
  stageIndex: number;
}

export interface RecordedEvent {
  workflowId: string;
  proofId: string;
  workflowStatus: WorkflowStatus;
  /**
   * The event's stage record after the event; its `auditTrail` holds the entries this event added to
   * the stage (the whole trail is in the proof package and behind verify).
   */
  stage: StageRecord;
  entry: ChainedEntry;
  chainHead: string;
  /** The stage open now (null once the workflow is closed). */
  currentStage: string | null;
  /** The blind policy proof the event carried, as the gate accepted it. */
  policyProof?: { policy: string; context: string; verified: true; insecureSetup: boolean };
}

/** What a batch is decided against: the workflow's fixed facts and its state. */
export interface WorkflowHead {
  id: string;
  proofId: string;
  template: WorkflowTemplate;
  owner: string;
  status: WorkflowStatus;
  state: ChainState;
}

/** The commitment the service acts under when it closes the Proof stage: derived from its public key id. */
export function serviceActorCommitment(): string {
  return sha256Hex(
    canonicalJson({ type: 'proof-exchange/service-actor/v1', keyId: servicePublicKey().keyId }),
  );
}

interface HeadRow {
  id: string;
  proof_id: string;
  template: string;
  owner: string;
  status: WorkflowStatus;
  chain_head: string;
  entry_count: number;
  stages: Array<Omit<StageState, 'entryHashes'>> | null;
  open_trail: string[] | null;
}

/**
 * A workflow's head in one statement (one snapshot). With `withTrail`, also the entry hashes of the
 * open stage: the only stage with entries and no proof hash yet, which closing it needs.
 */
export async function readHead(
  conn: Conn,
  id: string,
  withTrail: boolean,
): Promise<WorkflowHead | undefined> {
  const { rows } = (await conn
    .raw(
      `select w.id, w.proof_id, w.template, w.owner, w.status, w.chain_head, w.entry_count,
       (select json_agg(json_build_object('stage', s.stage, 'status', s.status,
          'actorCommitment', s.actor_commitment, 'timestamp', s.timestamp, 'proofHash', s.proof_hash,
          'approvers', s.approvers, 'evidence', s.has_evidence, 'policyEvidence', s.policy_evidence)
          order by s.idx)
        from workflow_stages s where s.workflow_id = w.id) as stages,
       case when ?::boolean then
         (select coalesce(json_agg(e.entry_hash order by e.seq), '[]'::json) from audit_entries e
          where e.workflow_id = w.id and e.stage = (select s.stage from workflow_stages s
            where s.workflow_id = w.id and s.status <> 'completed' order by s.idx limit 1))
       end as open_trail
     from workflows w where w.id = ?`,
      [withTrail, id],
    )
    .options({ name: 'workflow_head' })) as { rows: HeadRow[] };
  const row = rows[0];
  if (!row) return undefined;
  const template = findTemplate(row.template);
  if (!template) throw new Error(`workflow ${row.id} names an unknown template`);
  const stages = row.stages ?? [];
  const open = currentStageIndex(stages);
  return {
    id: row.id,
    proofId: row.proof_id,
    template,
    owner: row.owner,
    status: row.status,
    state: {
      head: row.chain_head,
      length: row.entry_count,
      stages: stages.map((s, i) => {
        // A pending stage has no entries yet; the open one's are loaded on request.
        const entryHashes = s.status === 'pending' ? [] : i === open ? row.open_trail : null;
        return { ...s, ...(entryHashes ? { entryHashes } : {}) };
      }),
    },
  };
}

/** The head of a workflow just prepared (nothing to read: every stage pending, the chain at genesis). */
export function preparedHead(input: {
  id: string;
  proofId: string;
  template: WorkflowTemplate;
  owner: string;
}): WorkflowHead {
  const ctx: WorkflowContext = { template: input.template, proofId: input.proofId };
  return { ...input, status: 'active', state: initialState(ctx) };
}

/** A claim to make in the transaction that writes the event's entry (a proven approval's); throws to refuse. */
export type EntryClaim = (trx: Knex.Transaction, entry: ChainedEntry) => Promise<void>;

interface Pending {
  event: WorkflowEvent;
  principal: Principal;
  gated?: GatedProof;
  claim?: EntryClaim;
  resolve(r: RecordedEvent): void;
  reject(err: unknown): void;
}

interface Plan {
  /** Per item, its reply or the rule it broke. */
  outcomes: Array<RecordedEvent | AppError>;
  entries: Array<{ entry: ChainedEntry; salt: string | null }>;
  /** The state after the batch, and the stages it changed. */
  state: ChainState;
  touched: Set<number>;
  status: WorkflowStatus;
}

const stageRecord = (s: StageState, added: ChainedEntry[]): StageRecord => ({
  stage: s.stage,
  status: s.status,
  actorCommitment: s.actorCommitment,
  timestamp: s.timestamp,
  proofHash: s.proofHash,
  auditTrail: added,
});

/** Decides a batch in order against a head; each event sees the ones before it. Pure but for salts and clock. */
function plan(head: WorkflowHead, items: readonly Pending[]): Plan {
  const { template } = head;
  const ctx: WorkflowContext = { template, proofId: head.proofId };
  let state = head.state;
  let status = head.status;
  const outcomes: Plan['outcomes'] = [];
  const entries: Plan['entries'] = [];
  const touched = new Set<number>();
  for (const { event, principal, gated } of items) {
    if (!principal.operator && head.owner !== principal.owner) {
      outcomes.push(notFound(`Workflow ${event.workflowId}`));
      continue;
    }
    // Only a proof that passed this stage's gate is a blind policy proof; any other hash is a document.
    const evidenceHash = gated ? gated.accepted.evidenceHash : event.evidenceHash;
    const evidenceKind: EvidenceKind | undefined =
      evidenceHash === undefined ? undefined : gated ? 'blind_policy_proof' : 'document';
    const salt = evidenceHash !== undefined ? newEvidenceSalt() : undefined;
    const { policyProof: _offered, ...plain } = event;
    let t: StateTransition;
    try {
      t = applyEventToState(
        ctx,
        state,
        { ...plain, ...(evidenceHash ? { evidenceHash } : {}) },
        {
          now: new Date(),
          ...(salt ? { evidenceSalt: salt } : {}),
          ...(evidenceKind ? { evidenceKind } : {}),
        },
      );
    } catch (err) {
      if (err instanceof AppError) {
        outcomes.push(err);
        continue;
      }
      throw err;
    }
    entries.push({ entry: t.entry, salt: salt ?? null });
    touched.add(t.index);
    state = t.state;
    status = t.workflowStatus;

    // Closing the Proof stage is the service's act, not a client's.
    const open = template.stages[currentStageIndex(state.stages)];
    if (status === 'active' && open?.phase === 'proof' && open.actions.includes('finalize')) {
      const last = applyEventToState(
        ctx,
        state,
        { stage: open.key, action: 'finalize', actorCommitment: serviceActorCommitment() },
        { now: new Date() },
      );
      entries.push({ entry: last.entry, salt: null });
      touched.add(last.index);
      state = last.state;
      status = last.workflowStatus;
    }
    const current = template.stages[currentStageIndex(state.stages)];
    outcomes.push({
      workflowId: head.id,
      proofId: head.proofId,
      workflowStatus: status,
      stage: stageRecord(t.state.stages[t.index] as StageState, [t.entry]),
      entry: t.entry,
      chainHead: state.head,
      currentStage: status === 'active' && current ? current.key : null,
      ...(gated
        ? {
            policyProof: {
              policy: gated.accepted.policy,
              context: gated.accepted.context,
              verified: true as const,
              insecureSetup: gated.accepted.insecureSetup,
            },
          }
        : {}),
    });
  }
  return { outcomes, entries, state, touched, status };
}

/** A decided batch of one workflow, ready to write. */
interface Decided {
  head: WorkflowHead;
  plan: Plan;
}

/**
 * Writes decided batches of any number of workflows in one statement: advances each workflow's head
 * from the one its batch was decided on (or leaves it, if another writer moved it), inserts the entries
 * and updates the stages of those it advanced, queues the log entry of each stage the batch closed
 * (the sequencer logs it), and opens the package outbox row of each that closed. Returns the ids it
 * advanced.
 */
async function writeDecided(conn: Conn, batches: readonly Decided[]): Promise<Set<string>> {
  const heads = batches.map(({ head, plan: p }) => ({
    id: head.id,
    head: p.state.head,
    count: p.state.length,
    status: p.status,
    prev_count: head.state.length,
    prev_head: head.state.head,
    closed: p.status !== 'active',
  }));
  const entries = batches.flatMap(({ head, plan: p }) =>
    p.entries.map(({ entry: e, salt }) => ({
      workflow_id: head.id,
      seq: e.seq,
      stage: e.stage,
      action: e.action,
      actor_commitment: e.actorCommitment,
      evidence_commitment: e.evidenceCommitment ?? null,
      evidence_kind: e.evidenceKind ?? null,
      at: e.at,
      prev_hash: e.prevHash,
      entry_hash: e.entryHash,
      evidence_salt: salt,
    })),
  );
  const stages = batches.flatMap(({ head, plan: p }) =>
    [...p.touched].map((idx) => {
      const s = p.state.stages[idx] as StageState;
      return {
        workflow_id: head.id,
        idx,
        status: s.status,
        actor_commitment: s.actorCommitment,
        timestamp: s.timestamp,
        proof_hash: s.proofHash,
        approvers: s.approvers,
        has_evidence: s.evidence,
        policy_evidence: s.policyEvidence,
      };
    }),
  );
  // A stage the batch touched and left closed was closed by it: a closed stage takes no more events.
  const logged = batches.flatMap(({ head, plan: p }) =>
    [...p.touched]
      .map((idx) => p.state.stages[idx] as StageState)
      .filter((s) => isClosed(s.status))
      .map((s) => {
        const { key, entry } = stageRecordEntry(head.proofId, s);
        return { workflow_id: head.id, key, entry: entry.toString('hex') };
      }),
  );
  const { rows } = (await conn
    .raw(
      `with i as (
       select * from json_to_recordset(?::json) as x(id text, head text, count int, status text,
         prev_count int, prev_head text, closed boolean)
     ), w as (
       update workflows t set chain_head = i.head, entry_count = i.count, status = i.status,
         updated_at = now()
       from i where t.id = i.id and t.entry_count = i.prev_count and t.chain_head = i.prev_head
       returning t.id, t.proof_id, i.closed
     ), e as (
       insert into audit_entries (workflow_id, seq, stage, action, actor_commitment, evidence_commitment,
         evidence_kind, at, prev_hash, entry_hash, evidence_salt)
       select x.workflow_id, x.seq, x.stage, x.action, x.actor_commitment, x.evidence_commitment,
         x.evidence_kind, x.at, x.prev_hash, x.entry_hash, x.evidence_salt
       from json_to_recordset(?::json) as x(workflow_id text, seq int, stage text, action text,
         actor_commitment text, evidence_commitment text, evidence_kind text, at text, prev_hash text,
         entry_hash text, evidence_salt text)
       join w on w.id = x.workflow_id
     ), s as (
       update workflow_stages t set status = x.status, actor_commitment = x.actor_commitment,
         timestamp = x.timestamp, proof_hash = x.proof_hash, approvers = x.approvers,
         has_evidence = x.has_evidence, policy_evidence = x.policy_evidence
       from json_to_recordset(?::json) as x(workflow_id text, idx int, status text,
         actor_commitment text, timestamp text, proof_hash text, approvers text[],
         has_evidence boolean, policy_evidence boolean)
       join w on w.id = x.workflow_id
       where t.workflow_id = x.workflow_id and t.idx = x.idx
     ), q as (
       insert into translog_queue (key, entry)
       select x.key, decode(x.entry, 'hex')
       from json_to_recordset(?::json) as x(workflow_id text, key text, entry text)
       join w on w.id = x.workflow_id
       on conflict (key) do nothing
     ), p as (
       insert into proof_packages (id, workflow_id) select w.proof_id, w.id from w where w.closed
       on conflict (id) do nothing
     )
     select id from w`,
      [JSON.stringify(heads), JSON.stringify(entries), JSON.stringify(stages), JSON.stringify(logged)],
    )
    .options({ name: 'workflow_append' })) as { rows: Array<{ id: string }> };
  return new Set(rows.map((r) => r.id));
}

/** A head to keep between batches: without the open stage's entry hashes, which can be long. */
function toCache(head: WorkflowHead, p: Plan): WorkflowHead {
  return {
    ...head,
    status: p.status,
    state: {
      head: p.state.head,
      length: p.state.length,
      stages: p.state.stages.map((s) => {
        if (s.status === 'pending' || !s.entryHashes) return s;
        const { entryHashes: _h, ...rest } = s;
        return rest;
      }),
    },
  };
}

class LostRace extends Error {}

/** Two writers that locked the same workflows in opposite orders: one is aborted, and tries again. */
const isDeadlock = (err: unknown): boolean => (err as { code?: unknown } | null)?.code === '40P01';

/** The events one process appends: a queue per workflow, and the heads its batches left. */
export class EventAppender {
  private readonly heads = new LRUCache<string, WorkflowHead>({ max: CACHED_HEADS });
  private readonly waiting = new Map<string, Pending[]>();
  /** Batches of different workflows decided in the same turn share one statement and one commit. */
  private readonly writer = new MicroBatch<Decided, boolean | Error>(
    (batches) => this.writeTogether(batches),
    MAX_WORKFLOWS_PER_WRITE,
  );

  constructor(private readonly db: Db) {}

  /** Keeps a head known to be current (a workflow just prepared). */
  remember(head: WorkflowHead): void {
    this.heads.set(head.id, head);
  }

  /** Resolves once the event is committed, or rejects with the rule it broke. */
  append(
    event: WorkflowEvent,
    principal: Principal,
    gated?: GatedProof,
    claim?: EntryClaim,
  ): Promise<RecordedEvent> {
    return new Promise((resolve, reject) => {
      const item: Pending = {
        event,
        principal,
        ...(gated ? { gated } : {}),
        ...(claim ? { claim } : {}),
        resolve,
        reject,
      };
      const queue = this.waiting.get(event.workflowId);
      if (queue) {
        queue.push(item);
        return;
      }
      this.waiting.set(event.workflowId, [item]);
      void this.drain(event.workflowId);
    });
  }

  /** Runs the workflow's queue batch by batch; events that arrive meanwhile form the next batch. */
  private async drain(id: string): Promise<void> {
    const queue = this.waiting.get(id) as Pending[];
    while (queue.length > 0) {
      // An event carrying a policy proof or a claim goes alone: its single-use claim shares its transaction.
      const proofAt = queue.findIndex((p) => p.gated || p.claim);
      const batch = queue.splice(
        0,
        proofAt === 0 ? 1 : Math.min(proofAt < 0 ? queue.length : proofAt, MAX_BATCH),
      );
      try {
        const outcomes = await this.run(id, batch);
        batch.forEach((item, i) => {
          const o = outcomes[i]!;
          if (o instanceof Error) item.reject(o);
          else item.resolve(o);
        });
      } catch (err) {
        for (const item of batch) item.reject(err);
      }
    }
    this.waiting.delete(id);
  }

  private async run(id: string, batch: Pending[]): Promise<Plan['outcomes']> {
    const claims = batch.some((p) => p.gated || p.claim);
    for (let attempt = 0; ; attempt++) {
      const locked = attempt >= OPTIMISTIC_ATTEMPTS;
      try {
        return locked || claims
          ? await this.db.transaction((trx) => this.attempt(trx, id, batch, attempt, locked))
          : await this.attempt(this.db, id, batch, attempt, false);
      } catch (err) {
        if (!(err instanceof LostRace || isDeadlock(err)) || locked) throw err;
        this.heads.delete(id);
      }
    }
  }

  private async attempt(
    conn: Conn,
    id: string,
    batch: Pending[],
    attempt: number,
    locked: boolean,
  ): Promise<Plan['outcomes']> {
    if (locked) await conn.raw('select 1 from workflows where id = ? for update', [id]);
    const cached = attempt === 0 ? this.heads.get(id) : undefined;
    let head = cached ?? (await readHead(conn, id, false));
    if (!head) return batch.map((p) => notFound(`Workflow ${p.event.workflowId}`));
    let p: Plan;
    try {
      p = plan(head, batch);
    } catch (err) {
      if (!(err instanceof StageTrailNeeded)) throw err;
      head = await readHead(conn, id, true);
      if (!head) return batch.map((i) => notFound(`Workflow ${i.event.workflowId}`));
      p = plan(head, batch);
    }
    // A refusal decided on a kept head is confirmed on the rows before it is given.
    if (p.entries.length === 0) {
      if (cached) throw new LostRace();
      return p.outcomes;
    }
    for (const [i, item] of batch.entries()) {
      const o = p.outcomes[i];
      if (item.gated && !(o instanceof Error)) {
        await claimPolicyProof(conn as Knex.Transaction, item.gated.accepted, head.id, item.gated.stageIndex);
      }
    }
    const decided = { head, plan: p };
    // Inside a transaction (a claim to take with it, or the row lock held) the write is its own.
    const won =
      conn === this.db ? await this.writer.add(decided) : (await writeDecided(conn, [decided])).has(id);
    if (won instanceof Error) throw won;
    if (!won) throw new LostRace();
    // An entry claim reads the trail before its entry: only once the write has won is that trail the
    // one the entry was decided on. A refusal rolls the write back with it.
    for (const [i, item] of batch.entries()) {
      const o = p.outcomes[i];
      if (item.claim && o && !(o instanceof Error)) await item.claim(conn as Knex.Transaction, o.entry);
    }
    this.heads.set(id, toCache(head, p));
    return p.outcomes;
  }

  /** One statement for all; if it fails for another reason than a deadlock, each again on its own. */
  private async writeTogether(batches: Decided[]): Promise<Array<boolean | Error>> {
    try {
      const won = await writeDecided(this.db, batches);
      return batches.map((b) => won.has(b.head.id));
    } catch (err) {
      if (isDeadlock(err)) return batches.map(() => false);
      if (batches.length === 1) return [err instanceof Error ? err : new Error(String(err))];
      return Promise.all(batches.map(async (b) => (await this.writeTogether([b]))[0]!));
    }
  }
}

const appenders = new WeakMap<Db, EventAppender>();

/** The one appender of a database handle in this process. */
export function appenderFor(db: Db): EventAppender {
  let a = appenders.get(db);
  if (!a) appenders.set(db, (a = new EventAppender(db)));
  return a;
}
