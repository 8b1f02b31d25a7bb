/**
 * OpenAPI path items of the job routes (routes/plugin/jobs.ts), merged into the plugin's.
 */
type Schema = Record<string, unknown>;

const TAG = "plugins/service";
const json = (schema: Schema, description: string) => ({
  description,
  content: { "application/json": { schema } },
});
const detail: Schema = { type: "object", properties: { detail: { type: "string" } } };
const queued: Schema = {
  type: "object",
  required: ["ok", "job_id", "message"],
  properties: {
    ok: { type: "boolean", const: true },
    job_id: { type: "integer" },
    message: { type: "string" },
    url: { type: "string", description: "The job at /api/core/jobs/{id}/" },
  },
};
const busy: Schema = {
  type: "object",
  properties: { ok: { type: "boolean" }, detail: { type: "string" }, job_id: { type: "integer" } },
};

export function jobOpenApiPaths(base: string): Record<string, Schema> {
  return {
    [`${base}/sync/`]: {
      post: {
        tags: [TAG],
        operationId: "service_sync_create",
        summary: "Queue (or schedule) a sync job (needs core.add_job)",
        description: "Runs the backend's stage streams as a durable job (docs/jobs.md). " +
          "Follow it at /api/core/jobs/{id}/ or live at jobs/{id}/stream.",
        requestBody: {
          required: false,
          content: {
            "application/json": {
              schema: {
                type: "object",
                additionalProperties: false,
                properties: {
                  sync_types: {
                    type: "array",
                    items: { type: "string" },
                    description: '["all"] (default) or sync types, e.g. ["devices"]',
                  },
                  hypervisor_endpoint_ids: { type: "array", items: { type: "integer" } },
                  job_name: { type: "string", maxLength: 200 },
                  schedule_at: { type: "string", format: "date-time" },
                  interval_value: { type: "integer", minimum: 1 },
                  interval_unit: { type: "string", enum: ["minutes", "hours", "days"] },
                },
              },
            },
          },
        },
        responses: {
          201: json(queued, "Queued or scheduled"),
          400: json({ type: "object" }, "Field errors, {field: [message]}"),
          403: json(detail, "Missing core.add_job"),
          409: json(busy, "A sync or repair is pending or running (its job_id)"),
          503: json(detail, "Storage busy; retry"),
        },
      },
    },
    [`${base}/repair/`]: {
      post: {
        tags: [TAG],
        operationId: "service_repair_create",
        summary: "Reconcile the custom fields, then a full sync (needs core.add_job)",
        responses: {
          201: json(queued, "Repair job queued"),
          403: json(detail, "Missing core.add_job"),
          409: json(busy, "A repair is pending or running"),
        },
      },
    },
    [`${base}/jobs/{id}/stream`]: {
      get: {
        tags: [TAG],
        operationId: "service_job_stream",
        summary: "A job's log live (SSE: log, step, error, then complete); needs core.view_job",
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "integer" } }],
        responses: {
          200: {
            description: "Server-Sent Events until the job ends",
            content: { "text/event-stream": { schema: { type: "string" } } },
          },
          403: json(detail, "Missing core.view_job"),
          404: json(detail, "No such job"),
        },
      },
    },
  };
}
