// What a monitor or verifier does with checkpoints gathered from anywhere (witnesses, other verifiers,
// bundles): find a split view, two histories shown to different parties. Pure and offline.
import { parseCheckpoint } from './checkpoint';
import type { SignedCheckpoint } from './checkpoint';
import { checkCheckpoint } from './policy';
import type { Policy } from './policy';

export interface SplitView {
  origin: string;
  size: number;
  /** The two checkpoints, as given. */
  checkpoints: [string, string];
  /** Their roots, base64. */
  roots: [string, string];
  /** The policy's witnesses whose cosignature verifies on each. */
  cosigners: [string[], string[]];
}

/**
 * Every pair of checkpoints of one origin and one size with different roots, each signed by a log of
 * the policy and cosigned by at least one of its witnesses: the log signed two trees where there is
 * one, and witnesses were shown them apart. Such a pair is evidence on its own; anyone holding the
 * policy can check it. Notes that do not parse, or that no log of the policy signed, prove nothing
 * and are passed over.
 */
export function splitViews(policy: Policy, notes: readonly string[]): SplitView[] {
  const seen = new Map<string, Array<{ note: string; cp: SignedCheckpoint; cosigners: string[] }>>();
  const found: SplitView[] = [];
  for (const note of notes) {
    let cp: SignedCheckpoint;
    try {
      cp = parseCheckpoint(note);
    } catch {
      continue;
    }
    const verdict = checkCheckpoint(policy, cp);
    if (!verdict.log || verdict.cosigned.size === 0) continue;
    const cosigners = [...verdict.cosigned.keys()].sort();
    const key = `${cp.size} ${cp.origin}`;
    const same = seen.get(key) ?? [];
    for (const other of same) {
      if (other.cp.root.equals(cp.root)) continue;
      found.push({
        origin: cp.origin,
        size: cp.size,
        checkpoints: [other.note, note],
        roots: [other.cp.root.toString('base64'), cp.root.toString('base64')],
        cosigners: [other.cosigners, cosigners],
      });
    }
    same.push({ note, cp, cosigners });
    seen.set(key, same);
  }
  return found;
}
