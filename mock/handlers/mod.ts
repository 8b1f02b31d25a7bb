/**
 * Specific handlers of the mock: the operations whose behaviour depends on cluster state,
 * split by API area as Proxmox's own modules are (access, acl, cluster, nodes, tasks, backup,
 * storage, pools, and per guest type: guests, guest actions, snapshots, agent). Keyed by
 * `METHOD /template`; anything not here is handled by the generic collections or answered with
 * schema-shaped sample data.
 */
import type { GuestType } from "../state.ts";
import type { HandlerTable } from "./context.ts";
import { accessHandlers } from "./access.ts";
import { aclHandlers } from "./acl.ts";
import { agentHandlers } from "./agent.ts";
import { backupHandlers } from "./backup.ts";
import { clusterHandlers } from "./cluster.ts";
import { diskHandlers } from "./disks.ts";
import { guestActionHandlers } from "./guest_actions.ts";
import { guestHandlers } from "./guests.ts";
import { nodeHandlers } from "./nodes.ts";
import { poolHandlers } from "./pools.ts";
import { snapshotHandlers } from "./snapshots.ts";
import { storageHandlers } from "./storage.ts";
import { taskHandlers } from "./tasks.ts";

export {
  firstNode,
  type HandlerContext,
  type HandlerTable,
  looksLikeTask,
  type MockServices,
  startTask,
} from "./context.ts";

function perGuestType(type: GuestType): HandlerTable {
  return {
    ...guestHandlers(type),
    ...guestActionHandlers(type),
    ...snapshotHandlers(type),
    ...agentHandlers(type),
  };
}

export const HANDLERS: HandlerTable = {
  ...accessHandlers,
  ...aclHandlers,
  ...clusterHandlers,
  ...nodeHandlers,
  ...taskHandlers,
  ...backupHandlers,
  ...storageHandlers,
  ...poolHandlers,
  ...perGuestType("qemu"),
  ...perGuestType("lxc"),
  ...diskHandlers,
};
