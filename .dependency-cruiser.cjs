// The house's layering, checked by `npm run lint` (dependency-cruiser). docs/architecture.md draws it.
//
// * shared/platform is the lowest layer: it imports no product line.
// * The product lines of shared/, lowest first: a line imports only the platform and lines before it.
// * shared/ imports none of the programs (api, workers, dev, cli); api and workers never import each other.
// * cli/client (the typed client) imports shared/ and itself only.
// * In api/routes, a route file imports no other route file; only a line folder's index.ts composes its
//   files (api/tables.ts composes the lines).
// No exceptions: a rule that needs one is a rule to change here, in the open.

/** Product lines of shared/, lowest first. */
const lines = [
  'chains',
  'credentials',
  'zk',
  'jobs',
  'deliveries',
  'payments',
  'licensing',
  'a2a',
  'exchange',
  'proofs',
  'workflows',
  'governance',
  'treasury',
  'auctions',
  'providers',
];

const lineOrder = lines.map((line, i) => ({
  name: `line-order-${line}`,
  comment: `shared/${line} imports only the platform and the lines before it (${lines.slice(0, i).join(', ') || 'none'}).`,
  severity: 'error',
  from: { path: `^shared/${line}/` },
  to: { path: `^shared/(${lines.filter((l) => l !== line && lines.indexOf(l) > i).join('|')})/` },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycles, at any depth.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'platform-imports-no-line',
      comment: 'shared/platform is the layer every line stands on: it imports none of them.',
      severity: 'error',
      from: { path: '^shared/platform/' },
      to: { path: '^shared/', pathNot: '^shared/platform/' },
    },
    {
      name: 'shared-has-no-top-level-files',
      comment: 'Everything in shared/ belongs to the platform or to one line.',
      severity: 'error',
      from: { path: '^shared/[^/]+[.]ts$' },
      to: {},
    },
    ...lineOrder,
    {
      name: 'shared-imports-no-program',
      comment:
        'shared/ is what the programs share; it imports none of them (the native prover is a package).',
      severity: 'error',
      from: { path: '^shared/' },
      to: { path: '^(api|workers|dev|cli|test|bench|scripts)/' },
    },
    {
      name: 'api-and-workers-apart',
      comment: 'api/ and workers/ share code only through shared/.',
      severity: 'error',
      from: { path: '^api/' },
      to: { path: '^workers/' },
    },
    {
      name: 'workers-and-api-apart',
      comment: 'api/ and workers/ share code only through shared/.',
      severity: 'error',
      from: { path: '^workers/' },
      to: { path: '^api/' },
    },
    {
      name: 'services-use-no-development-program',
      comment: 'The service runs without dev/ and cli/.',
      severity: 'error',
      from: { path: '^(api|workers|shared)/' },
      to: { path: '^(dev|cli)/' },
    },
    {
      name: 'client-stands-alone',
      comment:
        'cli/client is the typed client a program of its own can import: its generated types, openapi-fetch and the pure parts of shared/, nothing of the service, the other programs or the rest of cli/.',
      severity: 'error',
      from: { path: '^cli/client/' },
      to: { path: '^(api|workers|dev|bench|scripts|test)/|^cli/(?!client/)' },
    },
    {
      name: 'routes-import-no-routes',
      comment:
        'A route file imports no other route file; a line folder’s index.ts composes its files. What routes share lives outside api/routes.',
      severity: 'error',
      from: { path: '^api/routes/', pathNot: '^api/routes/[^/]+/index[.]ts$' },
      to: { path: '^api/routes/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
    },
  },
};
