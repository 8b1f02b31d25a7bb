/**
 * Regenerates domain/hypervisor_schema/catalogue_generated.ts from a Proxmox VE API schema file
 * (the API viewer's apidata, e.g. the one a 9.2 host serves): for every operation the built-in
 * catalogue covers, the names of the parameters Proxmox accepts there, and the facts (type,
 * limits, enums, property-string keys; no descriptions) of those the hand-written catalogue does
 * not define; plus the operations clients use that the catalogue lists only by name (ADDED).
 *
 *   deno run -A scripts/gen_catalogue.ts /path/to/pve-9.2.json
 */
import { handWrittenCatalogue } from "../domain/hypervisor_schema/catalogue.ts";
import type { Operation, ParamSchema, SchemaNode } from "../domain/hypervisor_schema/schema.ts";

/** Operations Ansible's Proxmox modules and inventory, proxmoxer tools and the sync call. */
const ADDED = [
  "GET /access/domains",
  "GET /access/roles",
  "GET /access/permissions",
  "GET /access/acl",
  "PUT /access/acl",
  "GET /cluster/options",
  "GET /nodes/{node}/version",
  "GET /nodes/{node}/dns",
  "GET /nodes/{node}/time",
  "GET /nodes/{node}/subscription",
  "GET /nodes/{node}/rrddata",
  "GET /nodes/{node}/aplinfo",
  "POST /nodes/{node}/aplinfo",
  "POST /nodes/{node}/storage/{storage}/download-url",
  "PUT /nodes/{node}/qemu/{vmid}/resize",
  "PUT /nodes/{node}/lxc/{vmid}/resize",
  "PUT /nodes/{node}/qemu/{vmid}/unlink",
  "POST /nodes/{node}/qemu/{vmid}/move_disk",
  "POST /nodes/{node}/lxc/{vmid}/move_volume",
  "POST /nodes/{node}/qemu/{vmid}/template",
  "POST /nodes/{node}/lxc/{vmid}/template",
  "GET /nodes/{node}/qemu/{vmid}/agent/info",
  "GET /nodes/{node}/qemu/{vmid}/agent/get-osinfo",
  "GET /nodes/{node}/qemu/{vmid}/agent/get-fsinfo",
  "POST /nodes/{node}/qemu/{vmid}/agent/ping",
  "GET /nodes/{node}/qemu/{vmid}/cloudinit",
  "PUT /nodes/{node}/qemu/{vmid}/cloudinit",
  "GET /nodes/{node}/qemu/{vmid}/cloudinit/dump",
  "GET /nodes/{node}/qemu/{vmid}/firewall/options",
  "PUT /nodes/{node}/qemu/{vmid}/firewall/options",
  "GET /nodes/{node}/qemu/{vmid}/rrddata",
  "GET /nodes/{node}/lxc/{vmid}/rrddata",
];

const KEEP = [
  "type",
  "optional",
  "enum",
  "pattern",
  "default",
  "minimum",
  "maximum",
  "minLength",
  "maxLength",
  "requires",
  "alias",
  "keyAlias",
  "default_key",
  "links",
] as const;

/** The facts of a parameter: no descriptions or verbose text. */
function facts(p: ParamSchema): ParamSchema {
  const out: ParamSchema = {};
  for (const k of KEEP) {
    if (p[k] === undefined || p[k] === null) continue;
    // A few limits are written as strings in Proxmox's files ("0").
    const numeric = ["minimum", "maximum", "minLength", "maxLength"].includes(k);
    (out as Record<string, unknown>)[k] = numeric ? Number(p[k]) : p[k];
  }
  if (typeof p.format === "string") out.format = p.format;
  else if (p.format && typeof p.format === "object") {
    out.format = Object.fromEntries(Object.entries(p.format).map(([k, v]) => [k, facts(v)]));
  }
  if (p.items) out.items = facts(p.items);
  if (p.properties) {
    out.properties = Object.fromEntries(
      Object.entries(p.properties).map(([k, v]) => [k, facts(v)]),
    );
  }
  return out;
}

function* walk(nodes: SchemaNode[] | undefined): Generator<SchemaNode> {
  for (const n of nodes ?? []) {
    yield n;
    yield* walk(n.children);
  }
}

/**
 * The generated module's text (before `deno fmt`) from a schema file's text; `source` names the
 * file in errors. Pure, so a test can hold the checked-in file to it (tests/scripts/
 * gen_catalogue_test.ts): the file must be what this produces, never edited by hand.
 */
export function renderCatalogue(
  text: string,
  source: string,
): { module: string; summary: string } {
  const tree: SchemaNode[] = JSON.parse(text.slice(text.indexOf("[")).replace(/;\s*$/, ""));
  const real = new Map<string, Operation>();
  for (const n of walk(tree)) {
    for (const [m, o] of Object.entries(n.info ?? {})) real.set(`${m} ${n.path}`, o!);
  }
  const names: Record<string, string[]> = {};
  const params: Record<string, Record<string, ParamSchema>> = {};
  const added: Record<string, { name?: string; protected?: 1; world?: 1; returns: ParamSchema }> =
    {};
  const covered = new Set<string>();
  for (const n of walk(handWrittenCatalogue())) {
    for (const [m, mine] of Object.entries(n.info ?? {})) {
      const key = `${m} ${n.path}`;
      covered.add(key);
      const theirs = real.get(key);
      if (!theirs) continue;
      const props = theirs.parameters?.properties ?? {};
      names[key] = Object.keys(props);
      const own = mine!.parameters?.properties ?? {};
      for (const [name, p] of Object.entries(props)) {
        if (own[name] && own[name].type === p.type) continue;
        (params[key] ??= {})[name] = facts(p);
      }
    }
  }
  for (const key of ADDED) {
    if (covered.has(key)) continue;
    const o = real.get(key);
    if (!o) throw new Error(`${key} is not in ${source}`);
    const props = o.parameters?.properties ?? {};
    names[key] = Object.keys(props);
    params[key] = Object.fromEntries(Object.entries(props).map(([k, v]) => [k, facts(v)]));
    const world = (o.permissions as { user?: string } | undefined)?.user === "world";
    added[key] = {
      ...(o.name ? { name: o.name } : {}),
      ...(o.protected ? { protected: 1 as const } : {}),
      ...(world ? { world: 1 as const } : {}),
      returns: o.returns ? facts(o.returns) : { type: "null" },
    };
  }

  const module =
    `// Generated by scripts/gen_catalogue.ts from Proxmox VE's API schema: parameter names and
// their facts (types, limits, enums, property-string keys), no descriptions. Do not edit; rerun
// the script with a newer schema file instead.
import type { ParamSchema } from "./schema.ts";

/** "METHOD /path" → every parameter name Proxmox accepts there. */
export const PVE_PARAM_NAMES: Record<string, string[]> = ${JSON.stringify(names)};

/** "METHOD /path" → parameters the hand-written catalogue lacks (or types differently). */
export const PVE_PARAMS: Record<string, Record<string, ParamSchema>> = ${JSON.stringify(params)};

/** Operations taken whole from the schema (clients use them; the catalogue only names them). */
export const PVE_ADDED_OPS: Record<
  string,
  { name?: string; protected?: 1; world?: 1; returns: ParamSchema }
> = ${JSON.stringify(added)};
`;
  const parameters = Object.values(params).reduce((a, p) => a + Object.keys(p).length, 0);
  return {
    module,
    summary: `${Object.keys(names).length} operations, ${parameters} parameters, ${
      Object.keys(added).length
    } added operations`,
  };
}

/** Where the generated module lives in the repository. */
export const CATALOGUE_TARGET = new URL(
  "../domain/hypervisor_schema/catalogue_generated.ts",
  import.meta.url,
);

if (import.meta.main) {
  const file = Deno.args[0];
  if (!file) {
    console.error("usage: deno run -A scripts/gen_catalogue.ts <pve schema.json>");
    Deno.exit(2);
  }
  const { module, summary } = renderCatalogue(await Deno.readTextFile(file), file);
  await Deno.writeTextFile(CATALOGUE_TARGET, module);
  const cmd = new Deno.Command(Deno.execPath(), { args: ["fmt", CATALOGUE_TARGET.pathname] });
  await cmd.output();
  console.log(`wrote ${CATALOGUE_TARGET.pathname}: ${summary}`);
}
