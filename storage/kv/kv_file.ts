/**
 * The KV file holds every stored secret (sealed or not), so it is owner-only: a directory
 * created for it gets 0700, the file and SQLite's side files (-wal, -shm, -journal) 0600,
 * tightened on every start for files made by older versions. Platforms without POSIX modes
 * (Windows) keep their own ACLs.
 */
async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

async function chmod(path: string, mode: number): Promise<void> {
  try {
    await Deno.chmod(path, mode);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotSupported)) {
      throw error;
    }
  }
}

/** Prepares a local KV path before `Deno.openKv` (URLs and ":memory:" are left alone). */
export async function prepareKvFile(kvPath: string | undefined): Promise<void> {
  if (!kvPath || kvPath === ":memory:" || /^https?:\/\//.test(kvPath)) return;
  const dir = kvPath.replace(/[\\/][^\\/]*$/, "");
  if (dir && dir !== kvPath && !(await exists(dir))) {
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    await chmod(dir, 0o700); // mkdir's mode is filtered by the umask
  }
  if (!(await exists(kvPath))) {
    // An empty file is a valid empty SQLite database; SQLite gives its side files this mode.
    await Deno.writeFile(kvPath, new Uint8Array(), { mode: 0o600, createNew: true });
  }
  for (const suffix of ["", "-wal", "-shm", "-journal"]) await chmod(kvPath + suffix, 0o600);
}
