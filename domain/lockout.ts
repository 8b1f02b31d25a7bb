/**
 * Per-client-IP authentication lockout (docs/api-behaviour.md, Backend: lockout). In memory by
 * design: a restart clears it. Memory is bounded: stale entries are dropped, and when the table is
 * full the oldest entry goes first (Map keeps insertion order, and every touch re-inserts).
 */

export const MAX_FAILURES = 5;
export const LOCKOUT_SECONDS = 300;
const DEFAULT_CAPACITY = 10_000;

interface Entry {
  failures: number;
  lockedUntil: number; // epoch ms; 0 when not locked
  lastSeen: number;
}

export class Lockout {
  readonly #entries = new Map<string, Entry>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly capacity = DEFAULT_CAPACITY,
  ) {}

  /** Seconds left on an active lock for this IP, or 0 when it may try. */
  secondsLocked(ip: string): number {
    const entry = this.#entries.get(ip);
    if (!entry || entry.lockedUntil === 0) return 0;
    const left = entry.lockedUntil - this.now();
    if (left <= 0) {
      this.#entries.delete(ip);
      return 0;
    }
    return Math.ceil(left / 1000);
  }

  recordFailure(ip: string): void {
    const now = this.now();
    const entry = this.#entries.get(ip) ?? { failures: 0, lockedUntil: 0, lastSeen: now };
    entry.failures += 1;
    entry.lastSeen = now;
    if (entry.failures >= MAX_FAILURES) entry.lockedUntil = now + LOCKOUT_SECONDS * 1000;
    this.#entries.delete(ip);
    this.#entries.set(ip, entry);
    this.#evict(now);
  }

  clear(ip: string): void {
    this.#entries.delete(ip);
  }

  get size(): number {
    return this.#entries.size;
  }

  #evict(now: number): void {
    if (this.#entries.size <= this.capacity) return;
    // Trim to 90% so the scan below runs once per many insertions, not on every one.
    const target = Math.floor(this.capacity * 0.9);
    const window = LOCKOUT_SECONDS * 1000;
    // First what can no longer lock anyone, then the oldest counting-only entries (Map order is
    // least recently touched first); active locks go last, so a flood cannot free a locked IP.
    for (const [ip, entry] of this.#entries) {
      const stale = entry.lockedUntil === 0
        ? now - entry.lastSeen > window
        : entry.lockedUntil <= now;
      if (stale) this.#entries.delete(ip);
    }
    for (const [ip, entry] of this.#entries) {
      if (this.#entries.size <= target) return;
      if (entry.lockedUntil === 0) this.#entries.delete(ip);
    }
    for (const ip of this.#entries.keys()) {
      if (this.#entries.size <= target) return;
      this.#entries.delete(ip);
    }
  }
}
