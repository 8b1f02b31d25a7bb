/**
 * Real Proxmox VE API schema files (`pve-9.2.json`, `pve-9.1.11.json`, the API viewer's tree) for
 * the tests that hold the hypervisor surface to them. The repository does not ship them, so a
 * clone on its own has none: those tests use `ignore: !HAS_SCHEMAS` and are reported as ignored,
 * with one banner saying why, while everything else runs on what the repository ships (the
 * built-in catalogue).
 *
 * Where they are looked for (README, "Tests"): the directory named by BRIDGEBOX_TEST_SCHEMA_DIR,
 * else `../shared/hypervisor-schema` beside the checkout. A variable that is set but names a
 * directory without both files is a mistake and fails loudly rather than skipping. `.ci/run` sets
 * the variable when that directory exists, and also runs the suite without it.
 */

export const SCHEMA_DIR_VARIABLE = "BRIDGEBOX_TEST_SCHEMA_DIR";
export const SCHEMA_FILES = ["pve-9.2.json", "pve-9.1.11.json"] as const;

const BESIDE_CHECKOUT = new URL("../../shared/hypervisor-schema/", import.meta.url);

function hasBoth(dir: URL): boolean {
  return SCHEMA_FILES.every((name) => {
    try {
      return Deno.statSync(new URL(name, dir)).isFile;
    } catch {
      return false;
    }
  });
}

function locate(): URL | null {
  const named = Deno.env.get(SCHEMA_DIR_VARIABLE);
  if (named) {
    const absolute = named.startsWith("/") ? named : `${Deno.cwd()}/${named}`;
    const dir = new URL(`file://${absolute.endsWith("/") ? absolute : `${absolute}/`}`);
    if (!hasBoth(dir)) {
      throw new Error(
        `${SCHEMA_DIR_VARIABLE}=${named} does not hold ${SCHEMA_FILES.join(" and ")}: ` +
          `point it at the directory with the Proxmox VE schema files, or unset it to skip the ` +
          `tests that need them`,
      );
    }
    return dir;
  }
  return hasBoth(BESIDE_CHECKOUT) ? BESIDE_CHECKOUT : null;
}

const FOUND = locate();

/** Whether the real schema files are present (tests that need them use `ignore: !HAS_SCHEMAS`). */
export const HAS_SCHEMAS = FOUND !== null;

/**
 * The directory holding the schema files (with a trailing slash). When they are absent this is
 * the default location, so paths can still be built; every test reading it is ignored then.
 */
export const SCHEMA_DIR: URL = FOUND ?? BESIDE_CHECKOUT;
/** The same directory as a file path, without the trailing slash. */
export const SCHEMA_DIR_PATH = decodeURIComponent(SCHEMA_DIR.pathname).replace(/\/$/, "");
export const SCHEMA_92 = new URL("pve-9.2.json", SCHEMA_DIR);
export const SCHEMA_9111 = new URL("pve-9.1.11.json", SCHEMA_DIR);

if (!HAS_SCHEMAS) {
  console.error(
    "*** No Proxmox VE schema files: the tests that need pve-9.2.json / pve-9.1.11.json are " +
      `SKIPPED (shown as 'ignored'); set ${SCHEMA_DIR_VARIABLE} to a directory holding both ` +
      "to run them (README, Tests). ***",
  );
}

/** Options for `Deno.test(name, NEEDS_SCHEMAS, fn)`: ignored (and reported) without the files. */
export const NEEDS_SCHEMAS: { ignore: boolean } = { ignore: !HAS_SCHEMAS };
