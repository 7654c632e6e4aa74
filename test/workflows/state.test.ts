// The live event path decides on a compact state (chain head, per-stage digests), not on the trail:
// over random event sequences it must decide exactly as the rules do on full records, including when
// the open stage's entry hashes were not loaded.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../shared/platform/errors';
import {
  StageTrailNeeded,
  applyEvent,
  applyEventToState,
  currentStageIndex,
  initialStages,
  initialState,
  stateOf,
} from '../../shared/workflows/engine';
import type { ChainState, EventOptions } from '../../shared/workflows/engine';
import type { StageRecord } from '../../shared/workflows/records';
import { stageActions, workflowTemplates } from '../../shared/workflows/templates';
import { actor, evidence } from './helpers';

/** The state as a process keeps it between batches: no entry hashes for stages that have entries. */
const asKept = (state: ChainState, keep = -1): ChainState => ({
  ...state,
  stages: state.stages.map((s, i) => {
    if (s.status === 'pending' || i === keep) return s;
    const { entryHashes: _h, ...rest } = s;
    return rest;
  }),
});

/** The state with entry hashes dropped wherever `like` has none (to compare what both hold). */
const likeKept = (state: ChainState, like: ChainState): ChainState => ({
  ...state,
  stages: state.stages.map((s, i) => {
    if (like.stages[i]?.entryHashes) return s;
    const { entryHashes: _h, ...rest } = s;
    return rest;
  }),
});

function outcome<T>(fn: () => T): T | string {
  try {
    return fn();
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
}

const command = fc.record({
  // Mostly the open stage (-1), so runs get far; sometimes any stage or none.
  stage: fc.oneof({ arbitrary: fc.constant(-1), weight: 4 }, { arbitrary: fc.nat(6), weight: 1 }),
  action: fc.oneof(
    { arbitrary: fc.constantFrom('approve', 'submit', 'attach_evidence'), weight: 12 },
    { arbitrary: fc.constantFrom(...stageActions), weight: 1 },
  ),
  who: fc.nat(12),
  evidence: fc.oneof(
    { arbitrary: fc.constant(true), weight: 2 },
    { arbitrary: fc.constant(false), weight: 1 },
  ),
  policy: fc.oneof({ arbitrary: fc.constant(true), weight: 2 }, { arbitrary: fc.constant(false), weight: 1 }),
});

describe('the compact state', () => {
  it.each(workflowTemplates.map((t) => [t.name, t] as const))(
    '%s: decides every event as the full records do',
    (_name, template) => {
      const ctx = { template, proofId: 'prf_state' };
      let completed = 0;
      fc.assert(
        fc.property(fc.array(command, { minLength: 20, maxLength: 60 }), (commands) => {
          let records: StageRecord[] = initialStages(template);
          let kept: ChainState = initialState(ctx);
          commands.forEach((c, i) => {
            const open = currentStageIndex(records);
            // The Proof stage is the service's to close, as the appender does.
            const finalizing = open >= 0 && template.stages[open]?.phase === 'proof';
            const index = c.stage < 0 || finalizing ? open : c.stage;
            const stage = template.stages[index]?.key ?? 'no_such_stage';
            const event = {
              stage,
              action: finalizing ? ('finalize' as const) : c.action,
              actorCommitment: actor(`actor ${c.who}`),
              ...(c.evidence ? { evidenceHash: evidence(`doc ${i}`) } : {}),
            };
            const options: EventOptions = {
              now: new Date(Date.UTC(2025, 0, 1, 0, i)).toISOString(),
              ...(c.evidence ? { evidenceSalt: `salt ${i}` } : {}),
              ...(c.evidence && c.policy ? { evidenceKind: 'blind_policy_proof' as const } : {}),
            };
            const full = outcome(() => applyEvent(ctx, records, event, options));
            let live: ReturnType<typeof applyEventToState> | string;
            try {
              live = outcome(() => applyEventToState(ctx, kept, event, options));
            } catch (err) {
              // What the appender does: read the head again with the open stage's entry hashes.
              expect(err).toBeInstanceOf(StageTrailNeeded);
              const withTrail = asKept(stateOf(ctx, records), currentStageIndex(records));
              live = outcome(() => applyEventToState(ctx, withTrail, event, options));
            }
            if (typeof full === 'string') {
              expect(live).toBe(full);
              return;
            }
            if (typeof live === 'string') throw new Error(`live path refused with ${live}`);
            expect(live.entry).toEqual(full.entry);
            expect(live.workflowStatus).toBe(full.workflowStatus);
            records = full.stages;
            // The state the live path carries is the digest of the records it stands for.
            expect(live.state).toEqual(likeKept(stateOf(ctx, records), live.state));
            kept = asKept(live.state);
            if (live.workflowStatus === 'completed') completed++;
          });
        }),
        { numRuns: 200 },
      );
      // The runs reach the end of the workflow, not only its first stage.
      expect(completed).toBeGreaterThan(0);
    },
  );

  it('asks for the open stage’s entry hashes only to close it', () => {
    const template = workflowTemplates.find((t) => t.name === 'Vendor Onboarding')!;
    const ctx = { template, proofId: 'prf_state' };
    const at = (m: number) => new Date(Date.UTC(2025, 0, 1, 0, m)).toISOString();
    const attach = applyEventToState(
      ctx,
      initialState(ctx),
      {
        stage: 'application',
        action: 'attach_evidence',
        actorCommitment: actor('a'),
        evidenceHash: evidence('d'),
      },
      { now: at(1), evidenceSalt: 's' },
    );
    const kept = asKept(attach.state);
    const more = applyEventToState(
      ctx,
      kept,
      {
        stage: 'application',
        action: 'attach_evidence',
        actorCommitment: actor('a'),
        evidenceHash: evidence('e'),
      },
      { now: at(2), evidenceSalt: 't' },
    );
    expect(more.state.length).toBe(2);
    expect(() =>
      applyEventToState(
        ctx,
        kept,
        { stage: 'application', action: 'submit', actorCommitment: actor('a') },
        { now: at(3) },
      ),
    ).toThrow(StageTrailNeeded);
  });
});
