/**
 * State of the host-agent mock: prepared image assets, created micro-VMs, the capacity they
 * use, and the faults an operator injected (a step that fails, a delay on every call). Kept in
 * memory per process, like the hypervisor mock's state.
 */

export const MOCK_STEPS = [
  "host_agent_health",
  "capabilities",
  "prepare_assets",
  "create_microvm",
  "start_microvm",
] as const;
export type MockStep = typeof MOCK_STEPS[number];

export interface HostCapacity {
  vcpus: number;
  memory_mib: number;
  disk_mib: number;
  supports_nat: boolean;
  supports_bridge: boolean;
}

export const DEFAULT_CAPACITY: HostCapacity = {
  vcpus: 16,
  memory_mib: 32_768,
  disk_mib: 262_144,
  supports_nat: true,
  supports_bridge: true,
};

export interface Faults {
  /** The step whose call answers an error until the faults are cleared. */
  fail_step: MockStep | null;
  /** HTTP status of the injected failure. */
  fail_status: number;
  /** Added to every call except the fault control routes (a slow host). */
  delay_ms: number;
}

export interface PreparedAssets {
  kernel_image_path: string;
  rootfs_image_path: string;
}

export interface MicrovmImage {
  name: string;
  kernel_image_url: string;
  kernel_image_sha256: string;
  rootfs_image_url: string;
  rootfs_image_sha256: string;
  architecture?: string;
  default_user?: string;
  image_id?: number | null;
}

export interface CreateMicrovm {
  microvm_id: string;
  name: string;
  vcpus: number;
  memory_mib: number;
  disk_mib: number;
  kernel_image_path: string;
  rootfs_image_path: string;
  network: { mode: "nat" | "bridge"; guest_ip?: string; [key: string]: unknown };
  ssh_authorized_keys: string[];
  metadata: Record<string, unknown>;
  architecture?: string;
  default_user?: string;
}

export interface MockMicrovm {
  microvm_id: string;
  name: string;
  status: "stopped" | "running";
  guest_ip: string;
  vcpus: number;
  memory_mib: number;
  disk_mib: number;
  kernel_image_path: string;
  rootfs_image_path: string;
  network: CreateMicrovm["network"];
  ssh_authorized_keys: string[];
  metadata: Record<string, unknown>;
  created_at: string;
  started_at: string | null;
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; status: 404 | 409; error: string };

const ASSET_ROOT = "/var/lib/host-agent/images";

export class HostAgentMock {
  capacity: HostCapacity;
  #microvms = new Map<string, MockMicrovm>();
  #assets = new Set<string>();
  #faults: Faults = { fail_step: null, fail_status: 500, delay_ms: 0 };
  #nextIp = 2;

  readonly #initialCapacity: HostCapacity;

  constructor(private readonly now: () => number, capacity: Partial<HostCapacity> = {}) {
    this.#initialCapacity = { ...DEFAULT_CAPACITY, ...capacity };
    this.capacity = { ...this.#initialCapacity };
  }

  get faults(): Faults {
    return { ...this.#faults };
  }

  setFaults(next: Partial<Faults>): Faults {
    this.#faults = { ...this.#faults, ...next };
    return this.faults;
  }

  setCapacity(next: Partial<HostCapacity>): HostCapacity {
    this.capacity = { ...this.capacity, ...next };
    return { ...this.capacity };
  }

  /** Forgets every micro-VM, asset and fault, and restores the initial capacity. */
  reset(): void {
    this.capacity = { ...this.#initialCapacity };
    this.#microvms.clear();
    this.#assets.clear();
    this.#faults = { fail_step: null, fail_status: 500, delay_ms: 0 };
    this.#nextIp = 2;
  }

  available() {
    let vcpus = this.capacity.vcpus;
    let memory = this.capacity.memory_mib;
    let disk = this.capacity.disk_mib;
    for (const vm of this.#microvms.values()) {
      disk -= vm.disk_mib;
      if (vm.status !== "running") continue;
      vcpus -= vm.vcpus;
      memory -= vm.memory_mib;
    }
    return {
      supports_nat: this.capacity.supports_nat,
      supports_bridge: this.capacity.supports_bridge,
      available_vcpus: Math.max(0, vcpus),
      available_memory_mib: Math.max(0, memory),
      available_disk_mib: Math.max(0, disk),
    };
  }

  /** Content-addressed paths: the same digests always prepare to the same files. */
  prepare(image: MicrovmImage): PreparedAssets {
    const arch = image.architecture ?? "x86_64";
    const assets = {
      kernel_image_path: `${ASSET_ROOT}/${arch}/${image.kernel_image_sha256.toLowerCase()}/vmlinux`,
      rootfs_image_path:
        `${ASSET_ROOT}/${arch}/${image.rootfs_image_sha256.toLowerCase()}/rootfs.ext4`,
    };
    this.#assets.add(assets.kernel_image_path);
    this.#assets.add(assets.rootfs_image_path);
    return assets;
  }

  create(input: CreateMicrovm): Outcome<MockMicrovm> {
    if (this.#microvms.has(input.microvm_id)) {
      return { ok: false, status: 409, error: `micro-VM ${input.microvm_id} already exists` };
    }
    for (const path of [input.kernel_image_path, input.rootfs_image_path]) {
      if (!this.#assets.has(path)) {
        return { ok: false, status: 409, error: `asset ${path} was not prepared` };
      }
    }
    if (input.disk_mib > this.available().available_disk_mib) {
      return { ok: false, status: 409, error: "not enough disk space on this host" };
    }
    const vm: MockMicrovm = {
      microvm_id: input.microvm_id,
      name: input.name,
      status: "stopped",
      guest_ip: input.network.guest_ip ?? this.#allocateIp(),
      vcpus: input.vcpus,
      memory_mib: input.memory_mib,
      disk_mib: input.disk_mib,
      kernel_image_path: input.kernel_image_path,
      rootfs_image_path: input.rootfs_image_path,
      network: input.network,
      ssh_authorized_keys: input.ssh_authorized_keys,
      metadata: input.metadata,
      created_at: new Date(this.now()).toISOString(),
      started_at: null,
    };
    this.#microvms.set(vm.microvm_id, vm);
    return { ok: true, value: { ...vm } };
  }

  list(): MockMicrovm[] {
    return [...this.#microvms.values()].map((vm) => ({ ...vm }));
  }

  get(id: string): MockMicrovm | null {
    const vm = this.#microvms.get(id);
    return vm ? { ...vm } : null;
  }

  /** Starting a running micro-VM is a no-op that reports it running, as most agents do. */
  start(id: string): Outcome<MockMicrovm> {
    const vm = this.#microvms.get(id);
    if (!vm) return { ok: false, status: 404, error: `micro-VM ${id} not found` };
    if (vm.status !== "running") {
      const free = this.available();
      if (vm.vcpus > free.available_vcpus || vm.memory_mib > free.available_memory_mib) {
        return { ok: false, status: 409, error: "not enough free vCPUs or memory to start" };
      }
      vm.status = "running";
      vm.started_at = new Date(this.now()).toISOString();
    }
    return { ok: true, value: { ...vm } };
  }

  stop(id: string): Outcome<MockMicrovm> {
    const vm = this.#microvms.get(id);
    if (!vm) return { ok: false, status: 404, error: `micro-VM ${id} not found` };
    vm.status = "stopped";
    vm.started_at = null;
    return { ok: true, value: { ...vm } };
  }

  delete(id: string): boolean {
    return this.#microvms.delete(id);
  }

  #allocateIp(): string {
    const n = this.#nextIp++;
    return `10.200.${Math.floor(n / 250) % 250}.${(n % 250) + 2}`;
  }
}
