/**
 * Every Deno KV key the app writes is built here, so the key space can be read in one place.
 * Each surface owns one top-level prefix.
 */

type Key = Deno.KvKey;

export const keys = {
  counter: (name: string): Key => ["counters", name],

  // backend surface
  apiKeyClaim: (): Key => ["backend", "api_keys", "claimed"],
  apiKeyByDigest: (digest: string): Key => ["backend", "api_keys", "by_digest", digest],
  apiKeyIdIndex: (id: number): Key => ["backend", "api_keys", "by_id", id],
  apiKeyIdIndexPrefix: (): Key => ["backend", "api_keys", "by_id"],
  apiKeyActiveCount: (): Key => ["backend", "api_keys", "active_count"],
  inventoryEndpoint: (id: number): Key => ["backend", "inventory_endpoint", "by_id", id],
  inventoryEndpointPrefix: (): Key => ["backend", "inventory_endpoint", "by_id"],
  inventoryEndpointSingleton: (): Key => ["backend", "inventory_endpoint", "singleton"],
  hypervisorEndpoint: (id: number): Key => ["backend", "hypervisor_endpoints", "by_id", id],
  hypervisorEndpointPrefix: (): Key => ["backend", "hypervisor_endpoints", "by_id"],
  hypervisorEndpointName: (name: string): Key => ["backend", "hypervisor_endpoints", "by_name", name],

  // hypervisor surface (rate limits, stored schema versions): see routes/hypervisor and mock/

  // inventory plugin (plugin models themselves live in the inventory model engine's keys)
  pluginSettings: (): Key => ["plugin", "settings"],

  // inventory surface (models, indexes, tokens, jobs): see domain/netbox and routes/inventory
};
