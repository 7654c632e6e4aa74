// The proof kinds this prover handles; each product line adds one import line here.
import './workflow-package';
import './blind-policy';
export {};
