// Fails when the committed circuit artifacts no longer match their sources or the manifest.
//   npm run circuits:check
import { terminateCurves } from '../shared/zk';
import { checkArtifacts } from './sources';

const problems = await checkArtifacts({ deep: true });
await terminateCurves();
if (problems.length > 0) {
  process.stderr.write(`Circuit artifacts are out of date:\n${problems.map((p) => `  ${p}`).join('\n')}\n`);
  process.exitCode = 1;
} else {
  process.stdout.write('Circuit artifacts match their sources and the manifest.\n');
}
