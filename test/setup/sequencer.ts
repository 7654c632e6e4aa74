// The order test files start in: the long ones first, so the run ends when its longest file does and
// not a long file's length after the rest (vitest would start files it has no timings for in any order;
// on a fresh clone it has none). The list is the slowest files of a run on a 2-core machine, longest
// first; a file missing from it starts after them, as vitest orders the rest. A stale name is harmless.
import { relative } from 'node:path';
import { BaseSequencer } from 'vitest/node';
import type { TestSpecification } from 'vitest/node';

export const slowFirst = [
  'test/quickstart/walkthroughs.test.ts',
  'test/workflows/approvals.test.ts',
  'test/zk/setup-provenance.test.ts',
  'test/zk/ceremony.test.ts',
  'test/platform/rotation.test.ts',
  'test/platform/startup.test.ts',
  'test/governance/trustees.test.ts',
  'test/governance/pages.test.ts',
  'test/credentials/issuer.test.ts',
  'test/quickstart/paid-walkthrough.test.ts',
  'test/zk/native/native-prover.test.ts',
  'test/platform/outage.test.ts',
  'test/jobs/streams.test.ts',
  'test/platform/crash.test.ts',
  'test/zk/setup.test.ts',
  'test/dev/devnet.test.ts',
  'test/cli/help.test.ts',
  'test/quickstart/readme.test.ts',
  'test/dev/production-start.test.ts',
  'test/platform/bundle.test.ts',
  'test/platform/witnessing.test.ts',
  'test/cli/px.test.ts',
  'test/governance/ballot-page.test.ts',
  'test/security/page-csp.test.ts',
  'test/governance/anonymity.test.ts',
  'test/bench/dev-ptau.test.ts',
  'test/auctions/trustees.test.ts',
  'test/platform/cluster.test.ts',
  'test/platform/trust.test.ts',
  'test/workflows/verify-page.test.ts',
];

export default class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rest = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = slowFirst.indexOf(relative(process.cwd(), f.moduleId));
      return i < 0 ? slowFirst.length : i;
    };
    // A stable sort: files off the list keep vitest's order among themselves.
    return rest
      .map((f, i) => ({ f, i }))
      .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
      .map(({ f }) => f);
  }
}
