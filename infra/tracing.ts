/**
 * The tracing port: spans around the work an operator follows in a trace viewer (a sync run, its
 * stages, a job). Infrastructure, as the logger is: any room takes a `Tracer` through its deps.
 *
 * `openTelemetryTracer()` speaks `@opentelemetry/api`. Deno's built-in OpenTelemetry registers
 * itself behind that API when the process runs with `OTEL_DENO=true` and then exports the spans
 * over OTLP (README, Metrics and tracing); without it every span is a no-op costing a function
 * call. Tests inject `noopTracer` or read the spans from a loopback OTLP receiver.
 */
import { type Attributes, SpanStatusCode, trace } from "@opentelemetry/api";

export type SpanAttributes = Record<string, string | number | boolean>;

/** The span a piece of work runs in: attributes learnt on the way, and how it ended. */
export interface ActiveSpan {
  set(attributes: SpanAttributes): void;
  /** Marks the span failed (an error status with this message); it still ends normally. */
  fail(message: string): void;
}

/** A span started without a callback: the caller ends it, once. */
export interface OpenSpan extends ActiveSpan {
  end(): void;
}

export interface Tracer {
  /**
   * Runs `work` inside a span named `name`; spans started within (awaited or not) are its
   * children. The span ends when `work` settles; a throw marks it failed and is rethrown.
   */
  span<T>(
    name: string,
    attributes: SpanAttributes,
    work: (span: ActiveSpan) => Promise<T>,
  ): Promise<T>;
  /**
   * Starts a child of the span active now (e.g. a stage inside `sync.run`) without making it the
   * active one: for a step of a loop, where a callback would wrap the whole body. Call `end()`.
   */
  start(name: string, attributes: SpanAttributes): OpenSpan;
}

const idleSpan: OpenSpan = { set() {}, fail() {}, end() {} };

export const noopTracer: Tracer = {
  span: (_name, _attributes, work) => work(idleSpan),
  start: () => idleSpan,
};

/** Spans through `@opentelemetry/api` under the instrumentation scope `name`. */
export function openTelemetryTracer(name = "bridgebox", version?: string): Tracer {
  const tracer = trace.getTracer(name, version);
  return {
    span(spanName, attributes, work) {
      return tracer.startActiveSpan(
        spanName,
        { attributes: attributes as Attributes },
        async (span) => {
          const active: ActiveSpan = {
            set: (more) => span.setAttributes(more as Attributes),
            fail: (message) => span.setStatus({ code: SpanStatusCode.ERROR, message }),
          };
          try {
            return await work(active);
          } catch (error) {
            span.recordException(error instanceof Error ? error : String(error));
            span.setStatus({
              code: SpanStatusCode.ERROR,
              message: error instanceof Error ? error.message : String(error),
            });
            throw error;
          } finally {
            span.end();
          }
        },
      );
    },
    start(spanName, attributes) {
      const span = tracer.startSpan(spanName, { attributes: attributes as Attributes });
      let ended = false;
      return {
        set: (more) => span.setAttributes(more as Attributes),
        fail: (message) => span.setStatus({ code: SpanStatusCode.ERROR, message }),
        end: () => {
          if (ended) return;
          ended = true;
          span.end();
        },
      };
    },
  };
}
