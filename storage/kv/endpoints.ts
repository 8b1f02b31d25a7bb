import type {
  HypervisorEndpointRecord,
  HypervisorEndpointStore,
  InventoryEndpointRecord,
  InventoryEndpointStore,
  Saved,
  VersionedRecords,
} from "../ports.ts";
import { keys } from "./keys.ts";
import { listValues, readSequence, retryAtomic } from "./ids.ts";

/** Compare-and-set on one record key: the write lands only on the version that was read. */
async function getVersioned<R>(kv: Deno.Kv, key: Deno.KvKey) {
  const entry = await kv.get<R>(key);
  return entry.value === null ? null : { record: entry.value, version: entry.versionstamp! };
}

async function replaceIfUnchanged<R>(kv: Deno.Kv, key: Deno.KvKey, version: string, record: R) {
  return (await kv.atomic().check({ key, versionstamp: version }).set(key, record).commit()).ok;
}

/** The inventory endpoint registry holds at most one entry; a singleton key enforces it. */
export class KvInventoryEndpointStore
  implements InventoryEndpointStore, VersionedRecords<InventoryEndpointRecord> {
  constructor(private readonly kv: Deno.Kv) {}

  getVersioned(id: number) {
    return getVersioned<InventoryEndpointRecord>(this.kv, keys.inventoryEndpoint(id));
  }

  /** Secrets and key_source only change here; the name and singleton indexes stay as they are. */
  replaceIfUnchanged(id: number, version: string, record: InventoryEndpointRecord) {
    return replaceIfUnchanged(this.kv, keys.inventoryEndpoint(id), version, record);
  }

  list(): Promise<InventoryEndpointRecord[]> {
    return listValues(this.kv, keys.inventoryEndpointPrefix());
  }

  async get(id: number): Promise<InventoryEndpointRecord | null> {
    return (await this.kv.get<InventoryEndpointRecord>(keys.inventoryEndpoint(id))).value;
  }

  create(data: Omit<InventoryEndpointRecord, "id">): Promise<Saved<InventoryEndpointRecord>> {
    return retryAtomic(async () => {
      const singleton = await this.kv.get(keys.inventoryEndpointSingleton());
      if (singleton.value !== null) return { ok: false, reason: "conflict" } as const;
      const seq = await readSequence(this.kv, "inventory_endpoint");
      const record = { id: seq.next, ...data };
      const result = await this.kv.atomic()
        .check(singleton)
        .check({ key: seq.key, versionstamp: seq.versionstamp })
        .set(seq.key, seq.next)
        .set(keys.inventoryEndpointSingleton(), record.id)
        .set(keys.inventoryEndpoint(record.id), record)
        .commit();
      return result.ok ? { ok: true, record } as const : undefined;
    });
  }

  update(
    id: number,
    data: Omit<InventoryEndpointRecord, "id">,
  ): Promise<Saved<InventoryEndpointRecord>> {
    return retryAtomic(async () => {
      const current = await this.kv.get<InventoryEndpointRecord>(keys.inventoryEndpoint(id));
      if (current.value === null) return { ok: false, reason: "not_found" } as const;
      const record = { id, ...data };
      const result = await this.kv.atomic().check(current).set(current.key, record).commit();
      return result.ok ? { ok: true, record } as const : undefined;
    });
  }

  delete(id: number): Promise<boolean> {
    return retryAtomic(async () => {
      const current = await this.kv.get(keys.inventoryEndpoint(id));
      if (current.value === null) return false;
      const result = await this.kv.atomic()
        .check(current)
        .delete(current.key)
        .delete(keys.inventoryEndpointSingleton())
        .commit();
      return result.ok ? true : undefined;
    });
  }
}

/** Hypervisor endpoint copies, unique by name through a name index checked in every write. */
export class KvHypervisorEndpointStore
  implements HypervisorEndpointStore, VersionedRecords<HypervisorEndpointRecord> {
  constructor(private readonly kv: Deno.Kv) {}

  getVersioned(id: number) {
    return getVersioned<HypervisorEndpointRecord>(this.kv, keys.hypervisorEndpoint(id));
  }

  /** For re-sealing: the caller keeps the name, so the name index needs no change. */
  replaceIfUnchanged(id: number, version: string, record: HypervisorEndpointRecord) {
    return replaceIfUnchanged(this.kv, keys.hypervisorEndpoint(id), version, record);
  }

  list(): Promise<HypervisorEndpointRecord[]> {
    return listValues(this.kv, keys.hypervisorEndpointPrefix());
  }

  async get(id: number): Promise<HypervisorEndpointRecord | null> {
    return (await this.kv.get<HypervisorEndpointRecord>(keys.hypervisorEndpoint(id))).value;
  }

  create(data: Omit<HypervisorEndpointRecord, "id">): Promise<Saved<HypervisorEndpointRecord>> {
    return retryAtomic(async () => {
      const name = await this.kv.get(keys.hypervisorEndpointName(data.name));
      if (name.value !== null) return { ok: false, reason: "conflict" } as const;
      const seq = await readSequence(this.kv, "hypervisor_endpoints");
      const record = { id: seq.next, ...data };
      const result = await this.kv.atomic()
        .check(name)
        .check({ key: seq.key, versionstamp: seq.versionstamp })
        .set(seq.key, seq.next)
        .set(name.key, record.id)
        .set(keys.hypervisorEndpoint(record.id), record)
        .commit();
      return result.ok ? { ok: true, record } as const : undefined;
    });
  }

  update(
    id: number,
    data: Omit<HypervisorEndpointRecord, "id">,
  ): Promise<Saved<HypervisorEndpointRecord>> {
    return retryAtomic(async () => {
      const current = await this.kv.get<HypervisorEndpointRecord>(keys.hypervisorEndpoint(id));
      if (current.value === null) return { ok: false, reason: "not_found" } as const;
      const record = { id, ...data };
      const op = this.kv.atomic().check(current).set(current.key, record);
      if (current.value.name !== data.name) {
        const name = await this.kv.get(keys.hypervisorEndpointName(data.name));
        if (name.value !== null) return { ok: false, reason: "conflict" } as const;
        op.check(name)
          .delete(keys.hypervisorEndpointName(current.value.name))
          .set(name.key, id);
      }
      const result = await op.commit();
      return result.ok ? { ok: true, record } as const : undefined;
    });
  }

  delete(id: number): Promise<boolean> {
    return retryAtomic(async () => {
      const current = await this.kv.get<HypervisorEndpointRecord>(keys.hypervisorEndpoint(id));
      if (current.value === null) return false;
      const result = await this.kv.atomic()
        .check(current)
        .delete(current.key)
        .delete(keys.hypervisorEndpointName(current.value.name))
        .commit();
      return result.ok ? true : undefined;
    });
  }
}
