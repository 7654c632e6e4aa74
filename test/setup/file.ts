// Placeholder until the per-file database setup lands.
export {};
