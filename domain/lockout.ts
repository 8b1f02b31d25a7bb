/**
 * Per-client-IP authentication lockout (docs/api-behaviour.md, Backend: lockout). In memory by
 * design: a restart clears it. Memory is bounded: addresses still counting and addresses locked
 * live in two tables of `capacity` entries each. A flood of new addresses only pushes out the
 * oldest counting entries (never the one just counted), and a table full of locks never stops a
 * new address from being counted and locked: the lock table drops its expired locks, then the
 * one that expires first. Map keeps insertion order, and every touch re-inserts.
 */

export const MAX_FAILURES = 5;
export const LOCKOUT_SECONDS = 300;
const DEFAULT_CAPACITY = 10_000;

interface Counting {
  failures: number;
  lastSeen: number;
}

/** What an observer (the metrics, infra/metrics.ts) hears of a lockout. */
export interface LockoutEvents {
  /** A failure was counted (also while the address is locked). */
  failure(): void;
  /** An address reached MAX_FAILURES and is locked now. */
  locked(): void;
}

export class Lockout {
  readonly #counting = new Map<string, Counting>();
  /** Address → epoch ms the lock ends. */
  readonly #locked = new Map<string, number>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly capacity = DEFAULT_CAPACITY,
    private readonly events?: LockoutEvents,
  ) {}

  /** Seconds left on an active lock for this IP, or 0 when it may try. */
  secondsLocked(ip: string): number {
    const until = this.#locked.get(ip);
    if (until === undefined) return 0;
    const left = until - this.now();
    if (left <= 0) {
      this.#locked.delete(ip);
      return 0;
    }
    return Math.ceil(left / 1000);
  }

  recordFailure(ip: string): void {
    const now = this.now();
    this.events?.failure();
    if (this.#locked.has(ip) && this.secondsLocked(ip) > 0) {
      this.#lock(ip, now);
      return;
    }
    const entry = this.#counting.get(ip) ?? { failures: 0, lastSeen: now };
    entry.failures += 1;
    entry.lastSeen = now;
    this.#counting.delete(ip);
    if (entry.failures >= MAX_FAILURES) {
      this.#lock(ip, now);
      this.events?.locked();
      return;
    }
    this.#counting.set(ip, entry);
    this.#evictCounting(now);
  }

  clear(ip: string): void {
    this.#counting.delete(ip);
    this.#locked.delete(ip);
  }

  get size(): number {
    return this.#counting.size + this.#locked.size;
  }

  #lock(ip: string, now: number): void {
    this.#locked.delete(ip);
    this.#locked.set(ip, now + LOCKOUT_SECONDS * 1000);
    if (this.#locked.size <= this.capacity) return;
    for (const [other, until] of this.#locked) {
      if (until <= now) this.#locked.delete(other);
    }
    // Every lock lasts as long, so the first in the table is the one that ends first.
    for (const other of this.#locked.keys()) {
      if (this.#locked.size <= this.capacity) return;
      if (other !== ip) this.#locked.delete(other);
    }
  }

  #evictCounting(now: number): void {
    if (this.#counting.size <= this.capacity) return;
    // Trim to 90% so the scan below runs once per many insertions, not on every one.
    const target = Math.max(1, Math.floor(this.capacity * 0.9));
    const window = LOCKOUT_SECONDS * 1000;
    for (const [ip, entry] of this.#counting) {
      if (now - entry.lastSeen > window) this.#counting.delete(ip);
    }
    // Least recently counted first; the entry just counted is the last in the map.
    for (const ip of this.#counting.keys()) {
      if (this.#counting.size <= target) return;
      this.#counting.delete(ip);
    }
  }
}
