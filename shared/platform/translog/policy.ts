// C2SP transparency log policies (c2sp.org/tlog-policy): the logs a verifier accepts, the witnesses it
// knows, and the quorum of them a checkpoint must be cosigned by. Pure.
import { cosignatureTime, logSigned } from './checkpoint';
import type { SignedCheckpoint } from './checkpoint';
import { SIG_COSIGNATURE_ED25519, SIG_ED25519, parseVkey } from './note';
import type { Vkey } from './note';

type Member = { kind: 'witness'; key: Vkey } | { kind: 'group'; threshold: number; members: string[] };

export interface Policy {
  logs: Array<{ key: Vkey; url?: string | undefined }>;
  witnesses: Map<string, { key: Vkey; url?: string | undefined }>;
  groups: Map<string, { threshold: number; members: string[] }>;
  /** The name of the witness or group that must be satisfied, or 'none'. */
  quorum: string;
}

/** Parses a policy file; throws with the line number on anything malformed. */
export function parsePolicy(text: string): Policy {
  const policy: Policy = { logs: [], witnesses: new Map(), groups: new Map(), quorum: '' };
  const defined = new Map<string, Member>();
  const lines = text.split('\n');
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const words = line.split(/[ \t]+/);
    const fail = (why: string): never => {
      throw new Error(`policy line ${i + 1}: ${why}`);
    };
    const [keyword, ...args] = words as [string, ...string[]];
    if (keyword === 'log') {
      if (args.length < 1 || args.length > 2) fail('log <vkey> [<url>]');
      const key = parseVkey(args[0]!);
      if (key.type !== SIG_ED25519) fail('a log key is an Ed25519 note key');
      policy.logs.push({ key, url: args[1] });
    } else if (keyword === 'witness') {
      if (args.length < 2 || args.length > 3) fail('witness <name> <vkey> [<url>]');
      const [name, vkey, url] = args as [string, string, string | undefined];
      if (name === 'none' || defined.has(name)) fail(`the name ${name} is taken`);
      const key = parseVkey(vkey);
      if (key.type !== SIG_COSIGNATURE_ED25519) fail('a witness key is an Ed25519 cosignature key');
      defined.set(name, { kind: 'witness', key });
      policy.witnesses.set(name, { key, url });
    } else if (keyword === 'group') {
      if (args.length < 3) fail('group <name> <threshold|all|any> <member>...');
      const [name, th, ...members] = args as [string, string, ...string[]];
      if (name === 'none' || defined.has(name)) fail(`the name ${name} is taken`);
      for (const m of members) if (!defined.has(m)) fail(`${m} is not defined above`);
      if (new Set(members).size !== members.length) fail('a group lists a member once');
      const threshold =
        th === 'all' ? members.length : th === 'any' ? 1 : /^[1-9][0-9]*$/.test(th) ? Number(th) : NaN;
      if (!(threshold >= 1 && threshold <= members.length)) fail('a threshold is 1..members, all or any');
      defined.set(name, { kind: 'group', threshold, members });
      policy.groups.set(name, { threshold, members });
    } else if (keyword === 'quorum') {
      if (args.length !== 1) fail('quorum <name>');
      if (policy.quorum) fail('one quorum line');
      if (args[0] !== 'none' && !defined.has(args[0]!)) fail(`${args[0]} is not defined above`);
      policy.quorum = args[0]!;
    } else {
      fail(`unknown keyword ${keyword}`);
    }
  });
  if (!policy.quorum) throw new Error('a policy has a quorum line');
  return policy;
}

/** Whether `name` (a witness or group) is satisfied by the witnesses that cosigned. */
function satisfied(policy: Policy, name: string, cosigned: ReadonlySet<string>): boolean {
  if (name === 'none') return true;
  if (policy.witnesses.has(name)) return cosigned.has(name);
  const group = policy.groups.get(name);
  if (!group) return false;
  return group.members.filter((m) => satisfied(policy, m, cosigned)).length >= group.threshold;
}

export interface PolicyVerdict {
  ok: boolean;
  /** The policy's log whose key signed it, if any. */
  log: Vkey | null;
  /** Policy witness names whose cosignature verifies, with the time each says it saw the checkpoint. */
  cosigned: Map<string, number>;
  reason?: string;
}

/** Checks a checkpoint against a policy: signed by one of its logs, cosigned by its quorum. */
export function checkCheckpoint(policy: Policy, cp: SignedCheckpoint): PolicyVerdict {
  const log = policy.logs.find((l) => logSigned(cp, l.key))?.key ?? null;
  const cosigned = new Map<string, number>();
  for (const [name, w] of policy.witnesses) {
    const t = cosignatureTime(cp, w.key);
    if (t !== null) cosigned.set(name, t);
  }
  if (!log) return { ok: false, log, cosigned, reason: 'not signed by a log of the policy' };
  if (!satisfied(policy, policy.quorum, new Set(cosigned.keys())))
    return { ok: false, log, cosigned, reason: `the witness quorum (${policy.quorum}) did not cosign it` };
  return { ok: true, log, cosigned };
}
