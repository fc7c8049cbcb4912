// How a server may compare tenant names: the x-service-tenant header's value is trimmed, and the
// API docs let a server ignore case. Two spellings with the same fold are one tenant to dus-sync
// (the config check, the document check, the journal's intents and history).

/** The name a server may take a tenant name for: without case, and without spaces at its ends (a header's value is trimmed). */
export function tenantFold(tenant: string): string {
  return tenant.trim().toLowerCase();
}
