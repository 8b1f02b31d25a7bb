/**
 * A failed call to an upstream API (the hypervisor or the inventory): what was attempted, where,
 * the HTTP status (null when nothing answered), an excerpt of the body and a hint for the operator.
 */
export class UpstreamCallError extends Error {
  constructor(
    readonly operation: string,
    readonly url: string,
    readonly status: number | null,
    readonly bodyExcerpt: string,
    readonly hint: string,
    /** How the body excerpt reads inside the message. */
    quoteExcerpt: (excerpt: string) => string = (excerpt) => ` (${excerpt})`,
  ) {
    super(
      `${operation} ${url}: ${status === null ? "no answer" : `HTTP ${status}`}${
        bodyExcerpt ? quoteExcerpt(bodyExcerpt) : ""
      }. ${hint}`,
    );
    this.name = new.target.name;
  }
}
