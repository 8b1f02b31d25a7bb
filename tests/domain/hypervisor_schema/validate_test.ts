/** Parameter validation as Proxmox does it. */
import assert from "node:assert/strict";
import {
  checkPropertyString,
  checkValue,
  validateParams,
} from "../../../domain/hypervisor_schema/validate.ts";
import type { Operation } from "../../../domain/hypervisor_schema/schema.ts";

const operation: Operation = {
  method: "POST",
  parameters: {
    additionalProperties: 0,
    properties: {
      node: { type: "string", format: "pve-node" },
      vmid: { type: "integer", minimum: 100, maximum: 999999999 },
      name: { type: "string", optional: 1, maxLength: 8, minLength: 2 },
      online: { type: "boolean", optional: 1 },
      mode: { type: "string", optional: 1, enum: ["snapshot", "stop"] },
      rate: { type: "number", optional: 1, minimum: 0 },
      ids: { type: "array", optional: 1, items: { type: "integer" } },
      "net[n]": {
        type: "string",
        optional: 1,
        format: {
          model: { type: "string", enum: ["virtio", "e1000"], default_key: 1 },
          macaddr: { type: "string", optional: 1, format: "mac-addr" },
          tag: { type: "integer", optional: 1, minimum: 1, maximum: 4094 },
          virtio: { alias: "macaddr", keyAlias: "model" },
        },
      },
    },
  },
};

Deno.test("validate: types are normalised; booleans accept 0/1/true/false/yes/no", () => {
  const r = validateParams(operation, {
    node: "pve1",
    vmid: "100",
    online: "true",
    rate: "1.5",
    ids: ["1", "2"],
  });
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.values, { node: "pve1", vmid: 100, online: 1, rate: 1.5, ids: [1, 2] });
  for (
    const [raw, v] of [["0", 0], ["1", 1], ["false", 0], ["yes", 1], [true, 1], [false, 0]] as const
  ) {
    assert.equal(checkValue({ type: "boolean" }, raw).value, v);
  }
});

Deno.test("validate: required, enum, range, length, format, unknown, repeated", () => {
  const r = validateParams(operation, {
    node: "bad node!",
    name: "x",
    mode: "suspend",
    rate: "-1",
    online: "perhaps",
    extra: "1",
  });
  const by = Object.fromEntries(r.errors.map((e) => [e.field, e.message]));
  assert.equal(by.vmid, "property is missing and it is not optional");
  assert.match(by.node, /valid node/);
  assert.equal(by.name, "value must be at least 2 characters long");
  assert.equal(
    by.mode,
    "value 'suspend' does not have a value in the enumeration 'snapshot, stop'",
  );
  assert.equal(by.rate, "value must have a minimum value of 0");
  assert.equal(by.online, "type check ('boolean') failed - got 'perhaps'");
  assert.equal(
    by.extra,
    "property is not defined in schema and the schema does not allow additional properties",
  );
  const big = validateParams(operation, { node: "a", vmid: "1000000000", name: "123456789" });
  assert.deepEqual(big.errors.map((e) => e.field).sort(), ["name", "vmid"]);
  const twice = validateParams(operation, { node: "a", vmid: ["100", "101"] });
  assert.deepEqual(twice.errors, [{ field: "vmid", message: "parameter given more than once" }]);
  // Paging parameters are accepted everywhere, as non-negative integers.
  assert.deepEqual(
    validateParams(operation, { node: "a", vmid: 100, limit: "5", start: "0" }).values.limit,
    5,
  );
});

Deno.test("validate: indexed parameters and property-string formats", () => {
  const ok = validateParams(operation, {
    node: "a",
    vmid: 100,
    net0: "virtio=BC:24:11:00:00:01,tag=10",
    net12: "e1000",
  });
  assert.deepEqual(ok.errors, []);
  const bad = validateParams(operation, {
    node: "a",
    vmid: 100,
    net1: "virtio=nope",
    net2: "e1000,tag=5000",
    net3: "rtl,x=1",
  });
  const by = Object.fromEntries(bad.errors.map((e) => [e.field, e.message]));
  assert.match(by.net1, /macaddr/);
  assert.match(by.net2, /tag: value must have a maximum value of 4094/);
  assert.match(by.net3, /enumeration|unknown key/);
  assert.equal(
    checkPropertyString(
      { size: { type: "integer" }, ro: { type: "boolean", optional: 1 } },
      "ro=1",
    ),
    "invalid format - size: property is missing and it is not optional",
  );
});

Deno.test("validate: oneOf parameters accept any variant and are optional when a variant is", () => {
  const op: Operation = {
    method: "PUT",
    parameters: {
      properties: {
        delete: {
          oneOf: [
            {
              "instance-types": ["bgp"],
              type: "array",
              optional: 1,
              items: { type: "string", enum: ["ip", "ip6"] },
            },
            {
              "instance-types": ["ospf"],
              type: "array",
              optional: 1,
              items: { type: "string", enum: ["area"] },
            },
          ],
        },
      },
    },
  };
  assert.deepEqual(validateParams(op, {}).errors, []);
  assert.deepEqual(validateParams(op, { delete: "area" }).values, { delete: ["area"] });
  assert.match(validateParams(op, { delete: "nope" }).errors[0].message, /enumeration/);
});
