/**
 * Reads a `/metrics` answer with a real Prometheus parser: the official Python client's
 * (`prometheus_client.parser.text_string_to_metric_families`, Debian's python3-prometheus-client),
 * run as a child process. Tests that need it use `ignore: !HAS_PROMETHEUS_PARSER`, and a missing
 * parser is reported once, loudly, as the TLS tests report a missing openssl (tests/_tls.ts).
 * .ci/run installs it.
 */

const PYTHON = "/usr/bin/python3";

/** Parses stdin; prints [{name, type, samples: [{name, labels, value}]}] or the parser's error. */
const SCRIPT = `
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    out.append({"name": family.name, "type": family.type, "help": family.documentation,
                "samples": [{"name": s.name, "labels": s.labels, "value": s.value}
                            for s in family.samples]})
json.dump(out, sys.stdout, allow_nan=True)
`;

async function probe(): Promise<boolean> {
  try {
    const out = await new Deno.Command(PYTHON, {
      args: ["-c", "import prometheus_client.parser"],
      stdout: "null",
      stderr: "null",
    }).output();
    return out.success;
  } catch {
    return false;
  }
}

export const HAS_PROMETHEUS_PARSER = await probe();
if (!HAS_PROMETHEUS_PARSER) {
  console.error(
    "\n*** python3-prometheus-client not found: the tests that parse /metrics are SKIPPED " +
      "(shown as 'ignored'). Install it (Debian: apt-get install -y python3-prometheus-client). " +
      "***\n",
  );
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

/** The families of an exposition, as the Prometheus client's parser reads them; throws if it cannot. */
export async function parseExposition(text: string): Promise<Family[]> {
  const child = new Deno.Command(PYTHON, {
    args: ["-c", SCRIPT],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(text));
  await writer.close();
  const out = await child.output();
  if (!out.success) {
    throw new Error(
      `the Prometheus parser refused the exposition: ${new TextDecoder().decode(out.stderr)}`,
    );
  }
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

/** Every sample of every family, flat. */
export function samples(families: Family[]): Sample[] {
  return families.flatMap((f) => f.samples);
}

/** The value of the sample `name` whose labels include `labels` (0 when there is none). */
export function valueOf(
  families: Family[],
  name: string,
  labels: Record<string, string> = {},
): number {
  const found = samples(families).filter((s) =>
    s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)
  );
  return found.reduce((sum, s) => sum + s.value, 0);
}
