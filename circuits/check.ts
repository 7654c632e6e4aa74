// Fails when the committed circuit artifacts no longer match their sources, the manifest or their
// ceremony transcripts, or (when the r1cs are built) a zkey no longer verifies against its r1cs and ptau.
//   npm run circuits:check
import { terminateCurves } from '../shared/zk';
import { checkArtifacts } from './sources';

// The ceremony's zkey verification needs the r1cs of npm run circuits:build; without it, it is skipped and said.
const problems = await checkArtifacts({
  deep: true,
  ceremony: true,
  note: (line) => process.stdout.write(`${line}\n`),
});
await terminateCurves();
if (problems.length > 0) {
  process.stderr.write(`Circuit artifacts are out of date:\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
  process.exitCode = 1;
} else {
  process.stdout.write('Circuit artifacts match their sources and the manifest.\n');
}
