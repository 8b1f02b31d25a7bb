/**
 * Structured log lines. Infrastructure, not domain: any room takes a `Logger` through its deps,
 * and this module imports nothing of the app (docs/architecture.md, The logger). The sink is
 * injected so tests can read what was logged.
 *
 * @module
 * @example
 * ```ts
 * const logger = new MemoryLogger();
 * logger.log("warning", "plugin key unavailable", { endpoint_id: 1 });
 * logger.at("warning").length; // 1
 * ```
 */

export type LogLevel = "debug" | "info" | "warning" | "error" | "critical";

export interface LogLine {
  level: LogLevel;
  message: string;
  [field: string]: unknown;
}

export interface Logger {
  log(level: LogLevel, message: string, fields?: Record<string, unknown>): void;
}

/** One JSON line per event on stderr; secrets must never be passed in `fields`. */
export function jsonLogger(write: (line: string) => void = (l) => console.error(l)): Logger {
  return {
    log(level, message, fields = {}) {
      write(JSON.stringify({ time: new Date().toISOString(), level, message, ...fields }));
    },
  };
}

export class MemoryLogger implements Logger {
  readonly lines: LogLine[] = [];
  log(level: LogLevel, message: string, fields: Record<string, unknown> = {}): void {
    this.lines.push({ level, message, ...fields });
  }
  at(level: LogLevel): LogLine[] {
    return this.lines.filter((l) => l.level === level);
  }
}
