/**
 * `--endpoints` names hypervisor endpoints the way users see them: a backend copy's id, the id of
 * the plugin record it was pushed from (the `(inv:<id>)` at the end of the copy's name, the id
 * the console and the plugin API show), or a name (the copy's, or the plugin record's without the
 * suffix). Resolved against `GET /hypervisor/endpoints` into the backend ids the stage streams
 * take (`hypervisor_endpoint_ids`).
 */

export interface EndpointCopy {
  id: number;
  name: string;
}

export type Resolution =
  | { ok: true; endpoints: EndpointCopy[] }
  | { ok: false; message: string };

const PLUGIN_SUFFIX = / \(inv:(\d+)\)$/;

function listing(copies: readonly EndpointCopy[]): string {
  if (copies.length === 0) return "the backend has no hypervisor endpoints";
  return "the backend's hypervisor endpoints: " +
    copies.map((c) => `${c.id} "${c.name}"`).join(", ");
}

/** Pure: each reference to exactly one copy, or a message saying which one is wrong and why. */
export function resolveEndpointRefs(
  refs: readonly string[],
  copies: readonly EndpointCopy[],
): Resolution {
  const chosen: EndpointCopy[] = [];
  for (const ref of refs) {
    const byName = copies.filter((c) =>
      c.name === ref || c.name.replace(PLUGIN_SUFFIX, "") === ref
    );
    let matches = byName;
    if (matches.length === 0 && /^[1-9]\d{0,9}$/.test(ref)) {
      const n = Number(ref);
      const byId = copies.filter((c) => c.id === n);
      const byPluginId = copies.filter((c) => Number(PLUGIN_SUFFIX.exec(c.name)?.[1]) === n);
      matches = [...new Set([...byId, ...byPluginId])];
      if (matches.length > 1) {
        return {
          ok: false,
          message: `--endpoints ${ref} is ambiguous: backend endpoint ${ref} is "${
            byId[0].name
          }", and plugin endpoint ${ref} is "${byPluginId[0].name}"; name it instead`,
        };
      }
    }
    if (matches.length === 0) {
      return { ok: false, message: `--endpoints: no endpoint "${ref}"; ${listing(copies)}` };
    }
    if (matches.length > 1) {
      return {
        ok: false,
        message: `--endpoints: "${ref}" names ${matches.length} endpoints (${
          matches.map((c) => `${c.id} "${c.name}"`).join(", ")
        }); use an id`,
      };
    }
    if (!chosen.some((c) => c.id === matches[0].id)) chosen.push(matches[0]);
  }
  return { ok: true, endpoints: chosen };
}

/** Reads the backend's copies and resolves the references against them. */
export async function resolveEndpoints(
  options: { url: string; key: string; refs: readonly string[]; client?: Deno.HttpClient },
  fetcher: typeof fetch,
): Promise<Resolution> {
  let response: Response;
  try {
    response = await fetcher(`${options.url}/hypervisor/endpoints`, {
      headers: { "X-Service-API-Key": options.key, accept: "application/json" },
      redirect: "manual",
      ...(options.client ? { client: options.client } : {}),
    } as RequestInit);
  } catch (error) {
    return {
      ok: false,
      message: `cannot reach ${new URL(options.url).origin} to look the endpoints up: ${
        (error as Error).message.replaceAll(options.key, "<key>")
      }`,
    };
  }
  const body = await response.json().catch(() => null);
  if (!response.ok || !Array.isArray(body)) {
    const detail = body && typeof body === "object" && "detail" in body
      ? JSON.stringify((body as { detail: unknown }).detail)
      : "";
    return {
      ok: false,
      message: `GET /hypervisor/endpoints answered ${response.status} ${detail}`.trim(),
    };
  }
  const copies = body
    .filter((e) => typeof e?.id === "number" && typeof e?.name === "string")
    .map((e) => ({ id: e.id as number, name: e.name as string }));
  return resolveEndpointRefs(options.refs, copies);
}
