// Placeholder until the database/redis global setup lands.
export default async function setup() {}
