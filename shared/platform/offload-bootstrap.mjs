// A verify-pool thread whose task module is TypeScript: tsx compiles it here, as `node --import tsx`
// does for the process itself (a thread does not inherit the process's loader).
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
const tasks = await import(workerData.entry);
export default tasks.default;
