// The home page: what the service is, and where a visitor can go from here.
const cards: Array<[string, string, string]> = [
  [
    '/proof-workflows/verify/',
    'Verify a proof',
    'Check any proof by its id or its package — a workflow, a vote, an auction, a treasury request or a blind policy proof.',
  ],
  [
    '/governance/',
    'Governance',
    'Private votes with anonymous ballots: every closed vote, its tally and its proof package.',
  ],
  [
    '/auctions/',
    'Auctions',
    'Sealed-bid auctions: public auctions, their rules, and each outcome with its proof package.',
  ],
  [
    '/docs',
    'API docs',
    'The agent exchange API (OpenAPI 3.1.0) and the platform API, to try in the browser.',
  ],
  ['/api/services', 'Services', 'What agents can buy here, with input schemas and prices (JSON).'],
  ['/.well-known/agent-card.json', 'Agent card', 'How agents discover and call this service (JSON).'],
];

export function homePage(): string {
  return `<h1>proof-exchange</h1>
<p class="lead">Privacy and proof infrastructure for organizations: prove that a process happened correctly, and let anyone check it — without seeing the private data behind it.</p>
<div class="cards">${cards
    .map(([href, title, text]) => `<a class="card" href="${href}"><h2>${title}</h2><p>${text}</p></a>`)
    .join('')}</div>
<p>Proof workflows, governance votes and sealed auctions end in signed proof packages; their public pages show what anyone can check, and nothing private.</p>`;
}
