/**
 * Tenant allow-list of hypervisor endpoints (docs/api-behaviour.md, Tenant allow-list).
 * Empty `allowed_tenants` puts an endpoint in the global pool; a tenant sees its explicit
 * grants, and the global pool only while it has no explicit grant at all.
 */

export interface TenantScoped {
  allowed_tenants: readonly number[];
}

/**
 * The rule as a predicate, given whether the tenant holds any explicit grant (so a caller can
 * learn that from an index instead of reading every endpoint).
 */
export function visibleTo(
  tenantId: number,
  tenantHasGrants: boolean,
): (endpoint: TenantScoped) => boolean {
  return tenantHasGrants
    ? (e) => e.allowed_tenants.includes(tenantId)
    : (e) => e.allowed_tenants.length === 0;
}

export function visibleToTenant<T extends TenantScoped>(
  endpoints: readonly T[],
  tenantId: number,
): T[] {
  const hasGrants = endpoints.some((e) => e.allowed_tenants.includes(tenantId));
  return endpoints.filter(visibleTo(tenantId, hasGrants));
}

/** The header names a tenant by id (all digits) or by slug. */
export function parseTenantRef(header: string): { id: number } | { slug: string } | null {
  const value = header.trim();
  if (!value) return null;
  if (/^\d+$/.test(value)) return { id: Number(value) };
  return { slug: value };
}
