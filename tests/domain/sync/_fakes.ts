/** In-memory fakes of the two sync ports, with a log of every write. */
import type {
  HypervisorReader,
  InventoryApi,
  InventoryBody,
  InventoryObject,
  SyncEndpoint,
} from "../../../domain/sync/ports.ts";
import assert from "node:assert/strict";
import { emptyResult, type StageContext } from "../../../domain/sync/context.ts";
import { DEFAULT_SYNC_OPTIONS } from "../../../domain/sync/options.ts";
import { runSync, STAGES, type SyncEvent } from "../../../domain/sync/runner.ts";

/** The one endpoint the domain sync tests run against. */
export const LAB: SyncEndpoint = {
  id: 1,
  name: "lab (inv:7)",
  ip: "10.0.0.1",
  port: 8006,
  use_https: true,
  verify_ssl: false,
  username: "root@pam",
};

/** The stages that work on guests in slices, with the devices stage they hang from. */
export const GUEST_STAGES = STAGES.filter((s) =>
  ["devices", "virtual-machines", "vm-disks", "vm-snapshots", "vm-interfaces", "ip-addresses"]
    .includes(s.type)
);

/**
 * One run of the stages of `types` on LAB against `hv`, which must end ok and without an error
 * frame; what it streamed is returned with it.
 */
export async function runStages(inv: FakeInventory, hv: FakeHypervisor, types: readonly string[]) {
  const events: SyncEvent[] = [];
  const complete = await runSync({
    stages: STAGES.filter((s) => types.includes(s.type)),
    endpoints: [LAB],
    hypervisor: () => hv,
    inventory: inv,
    emit: (e) => {
      events.push(e);
    },
    signal: new AbortController().signal,
    now: () => Date.UTC(2026, 0, 1),
  });
  assert.deepEqual(events.filter((e) => e.event === "error").map((e) => e.data), []);
  assert.equal(complete.ok, true, JSON.stringify(complete.errors));
  return { complete, events };
}

/** One run of the guest stages on LAB against `hv`, which must end ok. */
export async function runGuestStages(inv: FakeInventory, hv: FakeHypervisor) {
  return (await runStages(inv, hv, GUEST_STAGES.map((s) => s.type))).complete;
}

/** A model ordering such as VirtualMachine's (name, then pk). */
function netboxOrder(a: InventoryObject, b: InventoryObject): number {
  const [x, y] = [String(a.name ?? ""), String(b.name ?? "")];
  return x < y ? -1 : x > y ? 1 : a.id - b.id;
}

export class FakeInventory implements InventoryApi {
  readonly tables = new Map<string, Map<number, InventoryObject>>();
  readonly writes: string[] = [];
  #next = 1;
  /** Bodies matching this are refused, item by item, as NetBox answers a bulk write. */
  refuse: ((path: string, body: InventoryBody) => Record<string, string[]> | null) | null = null;

  table(path: string): Map<number, InventoryObject> {
    let t = this.tables.get(path);
    if (!t) this.tables.set(path, t = new Map());
    return t;
  }

  all(path: string): InventoryObject[] {
    return [...this.table(path).values()];
  }

  #tagId(slug: string): number | undefined {
    return this.all("extras/tags/").find((t) => t.slug === slug)?.id;
  }

  /**
   * NetBox's list: filters, then `fields` (only those, as NetBox 4 renders them) or `omit`, so
   * a stage that reads a field it did not ask for finds it missing here as it would there.
   */
  list(path: string, query: Record<string, string | string[]>) {
    const { fields, omit, ...filters } = query;
    const rows = this.all(path).filter((o) =>
      Object.entries(filters).every(([k, v]) => {
        const values = (Array.isArray(v) ? v : [v]).map(String);
        if (k === "tag") {
          const id = this.#tagId(values[0]);
          return Array.isArray(o.tags) && o.tags.includes(id);
        }
        if (k.endsWith("_id") && !(k in o)) {
          const ref = o[k.slice(0, -3)];
          return values.includes(
            String(typeof ref === "object" && ref ? (ref as { id: unknown }).id : ref),
          );
        }
        return values.includes(String(o[k]));
      })
    );
    const names = (v: string | string[] | undefined) =>
      v === undefined ? null : new Set(String(v).split(",").map((n) => n.trim()));
    const only = names(fields);
    const dropped = names(omit);
    const shown = rows.map((o) =>
      only || dropped
        ? Object.fromEntries(
          Object.entries(o).filter(([k]) => only ? only.has(k) : !dropped!.has(k)),
        ) as InventoryObject
        : o
    );
    return Promise.resolve(structuredClone(shown));
  }

  #refused(path: string, bodies: InventoryBody[]) {
    if (!this.refuse) return;
    const errors = bodies.map((b) => this.refuse!(path, b) ?? {});
    if (errors.some((e) => Object.keys(e).length)) {
      const error = Object.assign(new Error(`bulk write on ${path}: HTTP 400`), {
        operation: "bulk write on",
        url: `http://inventory.test/api/${path}`,
        status: 400,
        refused: true,
        itemErrors: errors,
        itemIndex: errors.findIndex((e) => Object.keys(e).length),
      });
      throw error;
    }
  }

  create(path: string, bodies: InventoryBody[]) {
    this.#refused(path, bodies);
    const made = bodies.map((b) => {
      const o = { ...structuredClone(b), id: this.#next++ } as InventoryObject;
      this.table(path).set(o.id, o);
      return o;
    });
    this.writes.push(...bodies.map(() => `POST ${path}`));
    return Promise.resolve(structuredClone(made));
  }

  /**
   * As NetBox 4.6's bulk view: ids no object has are passed over, the objects are walked in
   * their ordering (here name, then id) and the first refused one's errors alone are the
   * answer (no position), and the answer lists the objects in that ordering.
   */
  update(path: string, bodies: (InventoryBody & { id: number })[]) {
    const ordered = bodies.filter((b) => this.table(path).has(b.id)).sort((a, b) =>
      netboxOrder(this.table(path).get(a.id)!, this.table(path).get(b.id)!)
    );
    for (const b of ordered) {
      const errors = this.refuse?.(path, b);
      if (errors && Object.keys(errors).length) {
        throw Object.assign(new Error(`bulk write on ${path}: HTTP 400`), {
          operation: "bulk write on",
          url: `http://inventory.test/api/${path}`,
          status: 400,
          refused: true,
          fieldErrors: errors,
        });
      }
    }
    const done = ordered.map((b) => {
      const o = { ...this.table(path).get(b.id)!, ...structuredClone(b) };
      this.table(path).set(o.id, o);
      return o;
    });
    this.writes.push(...bodies.map((b) => `PATCH ${path}${b.id}`));
    return Promise.resolve(structuredClone(done.sort(netboxOrder)));
  }

  delete(path: string, ids: number[]) {
    for (const id of ids) this.table(path).delete(id);
    this.writes.push(...ids.map((id) => `DELETE ${path}${id}`));
    return Promise.resolve();
  }
}

/** A hypervisor answering from a table of paths (query strings ignored). */
export class FakeHypervisor implements HypervisorReader {
  readonly reads: string[] = [];
  constructor(readonly data: Record<string, unknown>) {}
  get<T>(path: string): Promise<T> {
    this.reads.push(path);
    if (!(path in this.data)) {
      return Promise.reject(
        Object.assign(new Error(`GET ${path}: HTTP 404`), {
          operation: "GET",
          url: `https://pve.test:8006/api2/json${path}`,
          status: 404,
          hint: "The path does not exist on this hypervisor.",
        }),
      );
    }
    return Promise.resolve(structuredClone(this.data[path]) as T);
  }
}

/** The MAC the mock-like worlds of these tests give guest `vmid` (`BC:24:11:00:hh:ll`). */
export function guestMac(vmid: number): string {
  return `BC:24:11:00:${(vmid >> 8).toString(16).padStart(2, "0")}:${
    (vmid & 255).toString(16).padStart(2, "0")
  }`.toUpperCase();
}

/** A two-node cluster with three guests, enough for the first three stages. */
export function smallCluster(): Record<string, unknown> {
  return {
    "/cluster/status": [
      { type: "cluster", name: "lab", quorate: 1, nodes: 2, version: 3 },
      { type: "node", name: "n1", nodeid: 1, online: 1, ip: "10.0.0.1", local: 1 },
      { type: "node", name: "n2", nodeid: 2, online: 1, ip: "10.0.0.2", local: 0 },
    ],
    "/nodes": [
      { node: "n1", status: "online", maxcpu: 8, maxmem: 1024 ** 3 },
      { node: "n2", status: "online", maxcpu: 8, maxmem: 1024 ** 3 },
    ],
    "/version": { version: "9.2.0" },
    "/storage": [{ storage: "local", type: "dir", content: "images,backup", shared: 0 }],
    "/nodes/n1/storage": [{ storage: "local", total: 100, used: 10, avail: 90 }],
    "/nodes/n2/storage": [{ storage: "local", total: 100, used: 20, avail: 80 }],
    "/cluster/resources": [
      { vmid: 101, name: "web", node: "n1", type: "qemu", status: "running" },
      { vmid: 102, name: "web", node: "n2", type: "qemu", status: "stopped" },
      { vmid: 200, name: "ct", node: "n1", type: "lxc", status: "running" },
    ],
    "/nodes/n1/qemu/101/config": {
      name: "web",
      memory: 2048,
      cores: 2,
      sockets: 2,
      scsi0: "local:vm-101-disk-0,size=32G",
      ide2: "none,media=cdrom",
      net0: "virtio=BC:24:11:00:65:00,bridge=vmbr0,tag=10",
      tags: "prod;web",
    },
    "/nodes/n2/qemu/102/config": { name: "web", memory: 1024, cores: 1 },
    "/nodes/n1/lxc/200/config": {
      hostname: "ct",
      memory: 512,
      cores: 1,
      rootfs: "local:vm-200-disk-0,size=8G",
      net0: "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:C8:00,ip=10.0.0.50/24",
    },
  };
}

/** A stage's context on `inv` (LAB, no cluster, a fixed clock), with what a test changes. */
export function stageContext(
  inv: InventoryApi,
  overrides: Partial<StageContext> = {},
): StageContext {
  return {
    endpoint: LAB,
    hv: new FakeHypervisor({}),
    inv,
    signal: new AbortController().signal,
    result: emptyResult(),
    progress: () => {},
    cache: new Map(),
    shared: new Map(),
    now: () => Date.UTC(2026, 0, 1),
    concurrency: 4,
    options: { ...DEFAULT_SYNC_OPTIONS },
    itemFailed: () => {},
    itemConflict: () => {},
    ...overrides,
  };
}
